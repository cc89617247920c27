package tools.kv

import rego.v1

annotations := {"destructiveHint": true} if input.arguments.method == "DELETE"
