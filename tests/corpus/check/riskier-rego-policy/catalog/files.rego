package tools.files

import rego.v1

# Deleting is destructive, but the listing says it is not.
annotations := {"readOnlyHint": true} if input.arguments.action == "read"

annotations := {"destructiveHint": true} if input.arguments.action == "delete"
