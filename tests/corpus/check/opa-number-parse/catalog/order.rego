package tools.order

import rego.v1

# A text of the request read into a number: OPA keeps `"1e3"`, `"007"`
# as spelled, regent fails closed.
deny contains "too much" if {
	input.arguments.amount != ""
	to_number(input.arguments.amount) > 100
}

meta := {"items": json.unmarshal(input.arguments.items)} if startswith(input.arguments.items, "[")

confirm := "big?" if {
	input.arguments.size != ""
	units.parse_bytes(input.arguments.size) > 1000
}

# A number by its schema, or a text checked first and bound to a local:
# no text to parse (a number's exact value is `opa-number-lost`'s).
deny contains "many" if to_number(input.arguments.count) > 10

deny contains "checked" if {
	s := input.arguments.checked
	regex.match(`^-?(0|[1-9][0-9]{0,8})(\.[0-9]{0,5}[1-9])?$`, s)
	to_number(s) > 5
}
