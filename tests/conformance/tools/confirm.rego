package conformance.confirm

import rego.v1

# The question put to the user before test_elicitation runs: the call's own
# `message` argument, or a fixed one when it is empty (an empty question is
# not one: check and serve refuse a policy that would ask it).
confirm := input.arguments.message if input.arguments.message != ""

else := "Run test_elicitation?"
