package tools.writes

import rego.v1

deny contains msg if {
	s := json.marshal(input.arguments.n)
	msg := concat("", ["n is ", s])
}
