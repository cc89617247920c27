package tools.files

import rego.v1

annotations := {"destructiveHint": false} if {
	input.arguments.action == "read"
	regex.split("/+", input.arguments.path)[1] == "tmp"
}
