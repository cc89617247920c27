package tools.files

import rego.v1

meta := {"owner": owner} if {
	input.arguments.action == "delete"
}
