package tools.purge

import rego.v1

annotations := {"destructiveHint": true} if {
	input.arguments.mode == "hard"
	groups := input.caller.claims.groups
	"ops" in groups
	"admin" in groups
	not "audit" in groups
}
