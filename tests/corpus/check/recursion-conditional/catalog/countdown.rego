package tools.countdown

import rego.v1

# Ends, but an argument chooses how deep it goes: enough to exhaust the stack.
default steps(_) := 0

steps(n) := steps(n - 1) + 1 if n > 0

annotations := {"readOnlyHint": true} if {
	steps(input.arguments.n) < 5
}
