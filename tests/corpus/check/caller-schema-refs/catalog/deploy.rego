package tools.deploy

import rego.v1

# Declared with a type: no warning, the caller schema refuses other types.
deny contains "banned" if "banned" in input.caller.claims.groups

deny contains "wrong tenant" if input.caller.claims.tenant != "acme"

# Declared without a type: a warning.
deny contains "no team" if input.caller.claims.team == "none"

# Not declared: never defined, like an argument missing from inputSchema.
deny contains "not ops" if not "ops" in input.caller.claims.gruops
