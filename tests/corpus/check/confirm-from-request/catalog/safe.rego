package tools.safe

import rego.v1

# Constant text around the request's: never blank, nothing reported.
confirm := sprintf("run %s?", [input.arguments.cmd])
