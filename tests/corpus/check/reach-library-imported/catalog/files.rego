package tools.files

import data.team
import rego.v1

annotations := {"destructiveHint": false} if {
	input.arguments.action == "read"
	not team.oncall
}
