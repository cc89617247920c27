package tools.resize

import rego.v1

# Strings by the schema and regent's own strings: nothing to say.
confirm := sprintf("resize %s for %s (%s)?", [input.arguments.name, input.caller.subject, input.tool])

# A number the client may spell by hand (1.50, 1E2), and an untyped value.
meta := {"size": json.marshal(input.arguments.size), "label": sprintf("%v", [input.arguments.label])}

# Comparing a number is answered as OPA does.
deny contains "too big" if input.arguments.size > 100
