package tools.export

import rego.v1

default annotations := {"openWorldHint": false}

annotations := {"openWorldHint": true} if {
	input.arguments.to == "bucket"
	input.caller
	input.caller.claims.tier != "internal"
	tenant := input.caller.claims.tenant
	not startswith(tenant, "corp-")
}

annotations := {"openWorldHint": true} if {
	input.caller.claims.admin == true
	input.caller.claims.tier == "public"
}
