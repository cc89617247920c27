package tools.db

import rego.v1

annotations := {"destructiveHint": true} if {
	input.arguments.action == "drop"
	trim_space(lower(input.arguments.env)) == "prod"
}
