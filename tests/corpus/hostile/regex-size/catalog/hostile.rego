package tools.hostile

deny contains "never" if {
	input.arguments.mode == "all"
	regex.match("((a{100}){100}){100}", "a")
}
