package tools.write

import rego.v1

path := input.arguments.path

annotations := {"destructiveHint": true} if {
	input.arguments.mode == "overwrite"
	startswith(path, "/etc")
	not contains(path, "..")
}

annotations := {"destructiveHint": false} if {
	p := input.arguments.path
	p == "/etc/motd"
	input.arguments.mode == "create"
}

deny contains sprintf("%s is not writable", [input.arguments.path]) if endswith(input.arguments.path, ".lock")
