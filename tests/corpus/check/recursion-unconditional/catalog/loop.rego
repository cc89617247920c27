package tools.loop

import rego.v1

# Never ends: regorus would only notice it while running.
f(n) := f(n + 1)

annotations := {"readOnlyHint": true} if {
	f(input.arguments.n) > 0
}
