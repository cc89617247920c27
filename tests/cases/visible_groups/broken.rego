package tools.broken

import rego.v1

# With a caller the two definitions conflict: an evaluation error, which
# hides the tool (never lists it by accident).
visible := true if input.caller

visible := false if input.caller

meta := {"broken": false}
