package tools.deploy

import rego.v1

import input.caller
import input.caller.claims as claims

# Every field input.caller has: subject and issuer (strings) and claims,
# with anything at all below claims (the token decides), by dot, by
# bracket, through an import.
visible if not input.caller.claims.employment == "contractor"

deny contains "no verified caller" if not input.caller

deny contains sprintf("%s (from %s) is not on call", [input.caller.subject, input.caller.issuer]) if {
	input.caller
	input.arguments.env == "prod"
	groups := object.get(input.caller, ["claims", "groups"], [])
	not "oncall" in groups
}

deny contains "suspended" if input.caller["claims"]["https://example.com/status"] == "suspended"

deny contains "unknown issuer" if caller.issuer == "https://untrusted.example"

deny contains "tenant mismatch" if claims.tenant.region.name == "eu"

confirm := sprintf("deploy to prod as %s?", [caller.subject]) if input.arguments.env == "prod"
