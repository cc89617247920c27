package tools.files

import rego.v1

# Outside /tmp/ a delete is destructive: the proof cannot enumerate paths,
# but sampling finds one.
annotations := {"destructiveHint": true} if {
	input.arguments.action == "delete"
	not startswith(input.arguments.path, "/tmp/")
}
