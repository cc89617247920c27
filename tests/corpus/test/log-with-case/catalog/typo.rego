package tools.typo

import rego.v1

annotations := {"readOnlyHint": "yes"} if input.arguments.kind == "string_hint"

annotations := {"title": "Renamed"} if input.arguments.kind == "title"

meta := ["not", "an", "object"] if input.arguments.kind == "list_meta"
