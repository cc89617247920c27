package tools.ledger

import rego.v1

# A number of the request compared, computed on, read by a builtin, and
# answered: where OPA's exact decimal and regent's double can differ.
deny contains "too large" if input.arguments.amount >= 1000000

deny contains "odd cents" if input.arguments.cents % 2 == 1

meta := {"rounded": round(input.arguments.amount), "tags": input.arguments.tags}

# A string by the schema, a comparison with a string, a count: nothing to
# say.
confirm := "post to the suspense account?" if input.arguments.account == "suspense"

deny contains "too many tags" if count(input.arguments.tags) > 10

deny contains "untagged" if "none" in input.arguments.tags
