package tools.files

import rego.v1

description := "Reads files" if input.arguments.action == "read"

input_schema := {"type": "object"}

annotations := {
	"title": "Read a file",
	"readOnlyHint": true,
} if input.arguments.action == "read"
