package tools.prices

import rego.v1

deny contains "too much" if input.arguments.price * 1.1 > 1000

deny contains "too many" if input.arguments.quantity + 1 > 100

deny contains "half" if count(input.arguments.items) * 2 > input.arguments.quantity - 3

deny contains "empty item" if {
	"" in input.arguments.items with input.tool as input.tool
}
