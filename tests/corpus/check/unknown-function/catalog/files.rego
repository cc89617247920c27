package tools.files

import rego.v1

annotations := {"destructiveHint": false} if {
	input.arguments.action == "read"
	startswith(input.arguments.path, "/tmp")
	not is_protected(input.arguments.path)
	strings.reverse_all(input.arguments.path) != ""
}

is_protected(p) if startswith(p, "/etc")
