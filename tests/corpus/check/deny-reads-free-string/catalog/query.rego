package tools.query

import rego.v1

annotations := {"idempotentHint": true} if input.arguments.action == "read"

deny contains "system files are off limits" if startswith(input.arguments.path, "/etc/")
