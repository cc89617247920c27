package tools.files

import rego.v1

deny contains reason if {
	input.arguments.action == "delete"
}
