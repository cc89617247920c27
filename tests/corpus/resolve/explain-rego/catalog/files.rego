package tools.files

import rego.v1

annotations.readOnlyHint := true if input.arguments.action == "read"

annotations.idempotentHint := true if input.arguments.action == "read"

# Deleting with force is destructive, which the listing
# (destructiveHint: false) does not allow.
annotations.destructiveHint := true if {
	input.arguments.action == "delete"
	input.arguments.force
}

default meta := {}

meta := {"scratch": true} if startswith(input.arguments.path, "/tmp/")
