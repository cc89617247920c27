package tools.files

import rego.v1

annotations := {"destructiveHint": false} if input.arguments.action == "read"
