package tools.status

import rego.v1

# No `visible` rule: everyone sees status.
meta := {"fresh": true}
