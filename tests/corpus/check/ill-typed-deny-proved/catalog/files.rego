package tools.files

import rego.v1

annotations := {"destructiveHint": true} if input.arguments.action == "delete"

deny contains 42 if startswith(input.arguments.path, "/etc")
