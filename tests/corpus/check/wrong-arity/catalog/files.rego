package tools.files

import rego.v1

annotations := {"destructiveHint": false} if {
	input.arguments.action == "read"
	safe(input.arguments.path, "x")
}

safe(p) if startswith(p, "/tmp")

meta := {"length": count(input.arguments.path, 1, 2)} if input.arguments.action == "append"
