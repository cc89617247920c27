package tools.sql

import rego.v1

deny contains "no drops" if {
	startswith(input.arguments.query, "DROP"
}
