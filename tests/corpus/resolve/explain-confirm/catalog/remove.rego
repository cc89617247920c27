package tools.remove

import rego.v1

deny contains "system paths are never removed" if startswith(input.arguments.path, "/etc/")

deny contains "the root is never removed" if input.arguments.path == "/"

confirm := sprintf("Remove %s?", [input.arguments.path])

meta := {"example.com/area": "files"}
