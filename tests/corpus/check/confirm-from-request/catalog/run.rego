package tools.run

import rego.v1

# The request's text as the whole message: blank (`"\t\n"`) fails the
# call closed under regent's contract, where OPA answers it.
confirm := input.arguments.cmd if input.arguments.cmd != "ls"
