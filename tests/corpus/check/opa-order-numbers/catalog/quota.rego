package tools.quota

import rego.v1

limits := {3, 7}

deny contains "over a limit" if {
	code := input.arguments.code
	regex.match(`^[0-9]+$`, code)
	some n in limits
	n > to_number(code)
}

deny contains "many" if {
	some n in limits
	count(input.arguments.items) >= n
}

deny contains "late dash" if {
	k := indexof(input.arguments.code, "-")
	some j in numbers.range(1, 3)
	k > j
}

deny contains "empty item" if {
	"" in input.arguments.items with input.tool as input.tool
}
