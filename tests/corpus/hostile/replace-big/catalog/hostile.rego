package tools.hostile

big := concat("", [s | some _ in numbers.range(1, 1000); s := "0123456789"])

deny contains "never" if {
	input.arguments.mode == "all"
	count(replace(big, "1", big)) > 0
}
