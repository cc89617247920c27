package tools.read

import rego.v1

annotations := {"openWorldHint": false} if {
	startswith(input.arguments.path, "/etc")
	not contains(input.arguments.path, "..")
}
