package tools.search

import rego.v1

deny contains "no wildcard queries" if {
	args := input.arguments
	args.qurey == "*"
}

deny contains "no private scope" if {
	args = input.arguments
	opts := args.options
	opts["scpoe"] == "private"
}

deny contains "empty query" if {
	input.arguments = a
	a.query == ""
}

# Bound twice (another `:=` in a comprehension): not followed.
deny contains "not an alias" if {
	args := input.arguments
	count([x | some x in [1]; args := {"other": x}]) > 0
	args.other == 1
}

# A path that is itself never defined is reported where it is written,
# once; its uses are not reported again.
deny contains "bad path" if {
	o := input.arguments.optoins
	o.scope == "public"
}
