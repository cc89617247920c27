package tools.deep

import rego.v1

# Rego forbids recursion (OPA rejects it when compiling); this function never
# ends. regorus would only notice while evaluating, so regent refuses the
# catalog at load, in `serve` as in `check`.
f(n) := f(n + 1)

annotations := {"readOnlyHint": true} if {
	input.arguments.n > 0
	f(input.arguments.n) > 0
}
