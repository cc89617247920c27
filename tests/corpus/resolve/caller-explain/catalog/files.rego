package tools.files

import rego.v1

annotations := {"readOnlyHint": true} if input.arguments.path == "/a"

annotations := {"destructiveHint": false} if input.caller.subject == "alice"
