package conformance.confirm

import rego.v1

# The question put to the user before test_elicitation runs: the call's own
# `message` argument, or a fixed one when it is blank (a blank question is
# not one: regent refuses it, and check warns where one may be asked).
confirm := input.arguments.message if trim_space(input.arguments.message) != ""

else := "Run test_elicitation?"
