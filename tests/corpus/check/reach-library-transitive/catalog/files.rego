package tools.files

import data.roles
import rego.v1

annotations := {"destructiveHint": false} if {
	input.arguments.action == "read"
	roles.reader
}
