package tools.spin

import rego.v1

# Counting pairs up to n*n takes far longer than any time limit once n is large.
annotations := {"readOnlyHint": true} if {
	count([1 | some i in numbers.range(1, input.arguments.n); some j in numbers.range(1, input.arguments.n)]) > 0
}
