package tools.files

import rego.v1

annotations := {"readOnlyHint": true} if input.arguments.action != "delete"

annotations := {"readOnlyHint": false} if input.arguments.path == ""
