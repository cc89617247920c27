package tools.odd

import rego.v1

# Not a boolean: the tool is hidden.
visible := "yes"

meta := {"odd": true}
