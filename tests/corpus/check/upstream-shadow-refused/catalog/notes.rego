package tools.notes

import rego.v1

deny contains "archived notes are kept" if startswith(input.arguments.path, "archive/")
