package tools.batch

import rego.v1

deny contains "big code" if to_number(input.arguments.code) * 3 > 1000

deny contains "big batch" if {
	size := input.arguments.size
	to_number(size) * count(input.arguments.items) > 100
}

deny contains "empty item" if {
	"" in input.arguments.items with input.tool as input.tool
}
