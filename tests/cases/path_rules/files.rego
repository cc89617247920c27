package tools.files

import rego.v1

# Rules defined by path: `annotations` itself is not a rule, only its keys.
annotations.readOnlyHint := true if input.arguments.action == "read"

annotations.destructiveHint := false if input.arguments.action == "read"

meta.action := input.arguments.action
