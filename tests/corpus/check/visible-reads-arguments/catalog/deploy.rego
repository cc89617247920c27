package tools.deploy

import rego.v1

import input.arguments as args

# tools/list decides visible once per caller, without arguments: these two
# definitions never hold, whatever the call would be.
visible if input.arguments.env == "staging"

visible if args.env == "staging"

# Deciding by the caller alone is what visible is for.
visible if "oncall" in input.caller.claims.groups

# Other rules of the package see the arguments as usual.
deny contains "prod needs a ticket" if {
	args.env == "prod"
	not input.caller.claims.ticket
}
