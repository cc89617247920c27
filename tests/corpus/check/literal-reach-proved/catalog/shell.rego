package tools.shell

import rego.v1

verb := lower(trim_prefix(trim_space(input.arguments.command), "sudo "))

annotations := {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false} if {
	sprintf("cmd:%s", [verb]) == "cmd:pwd"
} else := {"destructiveHint": false, "openWorldHint": false} if {
	parts := split(verb, " ")
	parts[0] in {"ls", "cat"}
} else := {"idempotentHint": true} if {
	substring(verb, 0, 4) == "echo"
	indexof(verb, ">") == -1
}
