package tools.write

import rego.v1

annotations := {"destructiveHint": true} if {
	input.arguments.mode == "overwrite"
	startswith(input.arguments.path, "/etc/")
	count(split(input.arguments.path, "/")) > 2
}
