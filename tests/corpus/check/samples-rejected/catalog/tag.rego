package tools.tag

import rego.v1

annotations := {"destructiveHint": true} if {
	input.arguments.action == "remove"
	input.arguments.label != "a-a"
}
