# Who the caller is, in the terms the team's rules use. A library package:
# no tool names it, so every tool's policy may import it.
#
# `input.caller` is the verified JWT (`serve --http --jwt-jwks-url`):
# `subject` (its `sub`), `issuer` (its `iss`) and `claims` (all of them).
# Without a verified caller it is absent, and every rule below is false.
package team

import rego.v1

# The IdP puts the caller's groups in a `groups` claim.
oncall if "oncall" in input.caller.claims.groups

# Contractors carry `employment: contractor`.
contractor if input.caller.claims.employment == "contractor"

# Callers acting for a customer carry the customer's `tenant`.
tenant := input.caller.claims.tenant
