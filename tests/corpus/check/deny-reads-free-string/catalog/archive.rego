package tools.archive

import rego.v1

annotations := {"destructiveHint": true} if input.arguments.action == "delete"

confirm := sprintf("delete %s?", [input.arguments.path]) if input.arguments.action == "delete"
