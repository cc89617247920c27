package tools.guarded

import rego.v1

# The request's text, where the body holds it non-blank: nothing reported.
confirm := input.arguments.cmd if trim_space(input.arguments.cmd) != ""
