package tools.notes

import rego.v1

confirm := sprintf("Delete %s?", [input.arguments.path])
