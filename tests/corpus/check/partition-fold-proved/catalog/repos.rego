package tools.repos

import rego.v1

owner := lower(input.arguments.owner)

annotations := {"destructiveHint": true} if owner == "microsoft"

annotations := {"destructiveHint": true} if {
	o := lower(input.arguments.owner)
	startswith(o, "ms-")
}
