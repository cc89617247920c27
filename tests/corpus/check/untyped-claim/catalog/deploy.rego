package tools.deploy

import rego.v1

# No `caller:` declaration: a token may carry any type under each claim.
deny contains "banned" if "banned" in input.caller.claims.groups

deny contains "no team" if {
	some team in input.caller.claims.teams
	team == "none"
}

deny contains "wrong tenant" if input.caller.claims.tenant != "acme"

# A type test in the same rule: no warning.
deny contains "suspended" if {
	is_array(input.caller.claims.flags)
	"suspended" in input.caller.claims.flags
}
