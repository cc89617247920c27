package tools.files

import rego.v1

annotations := {"readOnlyHint": true} if {
	input.arguments.action == "read"
}

annotations := {"destructiveHint": true} if {
	input.arguments.action == "delete"
	input.arguments.force
}
