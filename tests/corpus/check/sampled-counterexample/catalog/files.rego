package tools.files

import rego.v1

# Outside /tmp/ a delete is destructive: the proof cannot enumerate paths,
# but sampling finds one (the partition of free strings does not follow
# regex.match).
annotations := {"destructiveHint": true} if {
	input.arguments.action == "delete"
	not regex.match("^/tmp/", input.arguments.path)
}
