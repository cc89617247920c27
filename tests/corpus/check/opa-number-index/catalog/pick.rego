package tools.pick

import rego.v1

# A number of the request as an array's index, and an untyped value.
deny contains "reserved slot" if ["free", "free", "reserved"][input.arguments.slot] == "reserved"

meta := {"tier": ["low", "mid", "high"][input.arguments.level]}

# A key the schema declares a string, a literal, iteration: nothing to say.
deny contains "no such role" if not {"admin": true, "ops": true}[input.arguments.role]

confirm := "pick the last slot?" if ["a", "b", "c"][2] == "c"

deny contains "slot is the last" if {
	some i, x in ["a", "b", "c"]
	i == input.arguments.slot
	x == "c"
}
