package tools.files

import rego.v1

deny contains "relative paths are refused" if {
	input.arguments.action == "delete"
	not startswith(prefix, "/")
}
