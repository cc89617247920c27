package tools.grid

import rego.v1

deny contains "big ratio" if {
	r := input.arguments.ratio
	r * 2 > 10
}

deny contains "big code" if {
	code := input.arguments.code
	to_number(code) * 3 > 1000
}

deny contains "big rows" if {
	some x in [input.arguments.rows, input.arguments.ratio]
	x * 2 > 10
}

deny contains "big item" if {
	code := input.arguments.code
	regex.match(`^[0-9]+$`, code)
	some n in [c | some item in input.arguments.items; c := to_number(item) * 2]
	n > 10
}

deny contains "empty item" if {
	"" in input.arguments.items with input.tool as input.tool
}
