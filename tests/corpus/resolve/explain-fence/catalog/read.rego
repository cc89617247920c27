package tools.read

import rego.v1

deny contains "secrets are never read" if contains(input.arguments.path, "secret")
