# Who may deploy where. The annotations come from the YAML (a staging
# deploy is not destructive); this package decides whether the call runs.
package tools.deploy

import data.team
import rego.v1

deny contains "no verified caller: deploys need a signed-in user" if not input.caller

# Only the on-call group ships to prod.
deny contains sprintf("%s is not on call: only the oncall group deploys to prod", [input.caller.subject]) if {
	input.arguments.env == "prod"
	input.caller
	not team.oncall
}

# A deploy on a customer's behalf to prod is confirmed by the user first
# (docs/elicitation.md), naming what ships and for whom.
confirm := sprintf("Deploy %s %s to prod for tenant %s?", [input.arguments.service, input.arguments.version, team.tenant]) if {
	input.arguments.env == "prod"
}
