package tools.sync

import rego.v1

annotations := {"destructiveHint": true} if {
	not input.caller
	input.arguments.dry_run == false
}

annotations := {"openWorldHint": false} if input.caller.claims.tier == "internal"
