package tools.label

import rego.v1

# Reads `n`, which the schema leaves open: a number past a double's
# digits may meet this comparison.
deny contains "name has five parts" if count(split(input.arguments.name, ".")) == input.arguments.n
