package tools.restart

import rego.v1

# input.caller (a verified JWT over HTTP): subject, issuer and the claims,
# anything below claims.
oncall if "oncall" in input.caller.claims.groups

deny contains "no verified caller" if not input.caller

deny contains sprintf("%s (from %s) is not on call", [input.caller.subject, input.caller.issuer]) if {
	input.caller
	not oncall
}

# A claim read beside `claims` instead of under it.
deny contains "contractor" if input.caller.role == "contractor"
