package tools.spin

# Counting pairs up to n*n: 400 million steps at the schema's maximum, far
# past any time limit, with no builtin call inside the loop (the one range
# is built before it), so only the evaluation's own clock can stop it.
annotations := {"readOnlyHint": true} if {
	r := numbers.range(1, input.arguments.n)
	count([1 | some i in r; some j in r]) > 0
}
