package tools.files

import rego.v1

oncall if "oncall" in input.caller.claims.groups

annotations := {"readOnlyHint": true} if input.arguments.action == "read"

deny contains "no verified caller" if {
	input.arguments.action == "delete"
	not input.caller
}

deny contains sprintf("%s is not on call", [input.caller.subject]) if {
	input.arguments.action == "delete"
	input.caller
	not oncall
}
