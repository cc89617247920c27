package tools.edit

import rego.v1

base := {"list": ["a", "b", "c", "d"], "o": {"k": 1}}

# A patch's path from the request, as a pointer and as an array segment.
meta := {"moved": json.patch(base, [{"op": "move", "from": input.arguments.at, "path": "/o/m"}])}

deny contains "replaced" if json.patch(base, [{"op": "replace", "path": ["list", input.arguments.index], "value": "x"}]).o.k == 2

# Only its value from the request, the paths literals: nothing to say.
confirm := "add?" if json.patch(base, [{"op": "add", "path": ["list", 0], "value": input.arguments.value}]).list[0] == "x"
