package tools.names

import rego.v1

# A script class: Go's tables and Rust's may differ, so regent refuses it.
deny contains "greek" if regex.match(`^\p{Greek}+$`, input.arguments.name)

# The portable forms: a general category, ASCII classes as Go reads them,
# a literal `{`: nothing reported.
deny contains "letters" if regex.match(`^\pL+\d*$`, input.arguments.name)

deny contains "brace" if regex.match(`a{`, input.arguments.name)
