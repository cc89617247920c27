package tools.grep

import rego.v1

# A pattern from the request: regent refuses one it cannot reproduce
# (`\p{Greek}`) at run time, where OPA answers; check warns at the operand.
deny contains "match" if regex.match(input.arguments.pattern, input.arguments.text)

# A constant pattern is vetted where it is written: nothing reported.
deny contains "digits" if regex.match(`^[0-9]+$`, input.arguments.text)
