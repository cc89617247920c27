package tools.restart

import rego.v1

# Only the ops group sees restart: for anyone else (and without a caller)
# `visible` is undefined, which hides the tool.
visible if "ops" in input.caller.claims.groups

meta := {"asked_by": input.caller.subject}
