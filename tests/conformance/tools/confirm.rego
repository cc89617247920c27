package conformance.confirm

import rego.v1

# The question put to the user before test_elicitation runs: the call's own
# `message` argument.
confirm := input.arguments.message
