package tools.notes

import rego.v1

deny contains "archive is kept" if startswith(input.arguments.name, "archive/")
