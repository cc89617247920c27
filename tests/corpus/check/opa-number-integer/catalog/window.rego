package tools.window

import rego.v1

# A number of the request read as an integer by a builtin.
deny contains "too far" if time.add_date(0, 0, input.arguments.days, 0) > 4102444800000000000

meta := {"prefix": substring(input.arguments.name, input.arguments.start, 2)}

# Its string operand, a literal, or a builtin that reads the value alike:
# nothing to say.
confirm := "short name?" if count(substring(input.arguments.name, 0, 3)) < 3

deny contains "odd" if bits.and(input.arguments.days, 1) == 1
