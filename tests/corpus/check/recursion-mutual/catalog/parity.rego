package tools.parity

import rego.v1

even(n) if n == 0

even(n) if {
	n > 0
	odd(n - 1)
}

odd(n) if {
	n > 0
	even(n - 1)
}

annotations := {"readOnlyHint": true} if even(input.arguments.n)
