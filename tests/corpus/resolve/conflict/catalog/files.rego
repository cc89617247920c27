package tools.files

import rego.v1

annotations := {"destructiveHint": true} if input.arguments.action == "delete"

annotations := {"destructiveHint": false} if startswith(input.arguments.path, "/tmp/")
