package tools.hostile

deny contains "never" if {
	input.arguments.mode == "all"
	count(numbers.range(0, 9000000000000000000)) > 0
}
