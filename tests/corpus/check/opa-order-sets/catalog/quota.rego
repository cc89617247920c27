package tools.quota

import rego.v1

groups := [{"a"}, {"b": 1}]

deny contains "ordered" if {
	some g in groups
	some h in groups
	g < h
}

deny contains "largest" if max(groups) > {k | some k in input.arguments.items}

deny contains "empty item" if {
	"" in input.arguments.items with input.tool as input.tool
}
