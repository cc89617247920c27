package tools.files

import rego.v1

annotations := {"destructiveHint": false} if {
	input.arguments.action == "read"
	not risky
}

risky if {
	input.arguments.action == "delete"
	not careful
}

careful if not risky
