package tools.label

import rego.v1

# Reads only `name`, a string by the schema: no number of the request can
# meet this rule, however the request spells one.
deny contains "name has five parts" if count(split(input.arguments.name, ".")) == 5
