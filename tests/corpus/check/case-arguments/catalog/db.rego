package tools.db

import rego.v1

annotations := {"destructiveHint": true} if {
	input.arguments.action == "drop"
	replace(lower(input.arguments.env), " ", "") == "prod"
}
