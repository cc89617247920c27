package tools.logs

import rego.v1

annotations := {"destructiveHint": true} if input.arguments.mode == "purge"
