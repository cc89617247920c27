package tools.grid

import rego.v1

deny contains "too many cells" if {
	some i in numbers.range(1, input.arguments.rows)
	some j in [1, 2, 3]
	i * j > 40
}

deny contains "long" if {
	n := count(input.arguments.items)
	k := indexof(input.arguments.code, "-")
	n * k + 1 > 50
}

deny contains "far" if {
	some i, _ in input.arguments.items
	input.arguments.items[j]
	i * j > 10
}

deny contains "big code" if {
	code := input.arguments.code
	regex.match(`^[0-9]{1,6}$`, code)
	to_number(code) * 3 > 1000
}

deny contains "steep" if round(input.arguments.ratio) * 2 > 10

deny contains "empty item" if {
	"" in input.arguments.items with input.tool as input.tool
}
