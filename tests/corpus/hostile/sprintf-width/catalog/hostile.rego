package tools.hostile

deny contains "never" if {
	input.arguments.mode == "wide"
	count(sprintf("%01000000000d", [1])) > 0
}
