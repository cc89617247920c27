package tools.read_file

import data.lib.paths
import rego.v1

default inside := false

inside if paths.within(input.arguments.path)

meta := {"example.com/inside-root": inside}
