# Rolling back discards a release: contractors never see the tool, and
# neither does a request without a verified caller (`visible` is false, or
# undefined, for them). For everyone else it lists and runs as declared.
package tools.rollback

import data.team
import rego.v1

visible if {
	input.caller
	not team.contractor
}

# A prod rollback, like a prod deploy, is the on-call group's.
deny contains sprintf("%s is not on call: only the oncall group rolls back prod", [input.caller.subject]) if {
	input.arguments.env == "prod"
	not team.oncall
}
