package tools.deep

import rego.v1

# Recursive functions are legal Rego; this one never ends. regorus uses a few
# KiB of native stack per call, so the evaluation must hit the time limit
# before the thread's stack ends (an overflow would abort the server).
f(n) := f(n + 1)

annotations := {"readOnlyHint": true} if {
	input.arguments.n > 0
	f(input.arguments.n) > 0
}
