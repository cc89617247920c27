package tools.release

import rego.v1

annotations := {"destructiveHint": false} if {
	trim_space(input.arguments.channel) != "stable"
	lower(input.arguments.channel) == "Beta"
}
