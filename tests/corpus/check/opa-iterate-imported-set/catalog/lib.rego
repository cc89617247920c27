package lib

import rego.v1

# A partial set: a set in OPA and in regorus, the empty one at worst.
option_like contains "the branch would be read as an option" if {
	startswith(input.arguments.branch, "-")
}
