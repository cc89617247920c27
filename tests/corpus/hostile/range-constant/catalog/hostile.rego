package tools.hostile

deny contains "never" if {
	input.arguments.mode == "all"
	count(numbers.range(1, 1000000000)) > 0
}
