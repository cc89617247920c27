package tools.sql

import rego.v1

first := lower(trim_space(split(input.arguments.query, " ")[0]))

annotations := {"openWorldHint": true} if first == "copy"
