package tools.remove

import rego.v1

deny contains "system paths are never removed" if startswith(input.arguments.path, "/etc/")

deny contains "the root is never removed" if input.arguments.path == "/"

confirm := sprintf("Remove %s?", [input.arguments.path])

meta := {"example.com/area": "files"}

# A second reason for the same path, from another definition.
deny contains sprintf("%s is in use", [input.arguments.path]) if endswith(input.arguments.path, "/hosts")
