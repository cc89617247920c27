package tools.files

import rego.v1

annotations := {"destructiveHint": "yes"} if input.arguments.action == "a"

meta := 5 if input.arguments.action == "b"

security_schemes := "none" if input.arguments.action == "c"

deny contains 7 if input.arguments.action == "d"

confirm := 42 if input.arguments.action == "e"
