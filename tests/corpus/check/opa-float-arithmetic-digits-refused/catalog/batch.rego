package tools.batch

import rego.v1

deny contains "big amount" if to_number(input.arguments.amount) * 3 > 1000

deny contains "big code" if to_number(input.arguments.code) * 3 > 1000

deny contains "empty item" if {
	"" in input.arguments.items with input.tool as input.tool
}
