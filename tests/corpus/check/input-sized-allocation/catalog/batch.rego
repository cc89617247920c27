package tools.batch

import rego.v1

# The client chooses how many numbers regorus allocates.
deny contains "batch too large" if count(numbers.range(1, input.arguments.n)) > 100

# Through a local variable: the format string comes from input.
deny contains "bad pattern" if {
	format := input.arguments.pattern
	count(sprintf(format, [1])) > 10
}

# Joined once per element of a comprehension over an input-chosen separator.
deny contains "too long" if {
	sep := input.arguments.sep
	parts := [concat(sep, [x, x]) | some x in ["a", "b"]]
	count(parts) > 5
}

# Not sized by the client: constant bounds, a constant format without a
# width, concat outside a comprehension.
deny contains msg if {
	count(numbers.range(1, 3)) > 5
	msg := sprintf("unknown name %s", [input.arguments.name])
	concat(",", [input.arguments.name]) == "z"
}
