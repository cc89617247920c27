package tools.files

import rego.v1

annotations := {"openWorldHint": "yes"} if startswith(input.arguments.path, "http")
