package tools.write

import rego.v1

annotations := {"destructiveHint": false} if {
	input.arguments.mode == "create"
	startswith(input.arguments.path, "/tmp/")
}

annotations := {"idempotentHint": true} if {
	startswith(lower(input.arguments.path), "/etc")
}
