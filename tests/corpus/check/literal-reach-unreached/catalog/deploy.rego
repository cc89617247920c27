package tools.deploy

import rego.v1

annotations := {"destructiveHint": false} if {
	startswith(lower(input.arguments.target), "staging-")
	strings.reverse(input.arguments.target) != "dorp"
}
