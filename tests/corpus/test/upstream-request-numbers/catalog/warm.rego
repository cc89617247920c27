package tools.warm

import rego.v1

# Relayed when the request's numbers, written, are what the policy expects.
upstream_request := "relay" if {
	input.request.method == "sampling/createMessage"
	json.marshal(input.request.params.maxTokens) == "10"
	json.marshal(object.get(input.request.params, "temperature", 0)) in {"0", "0.5"}
	json.marshal(object.get(input.arguments, "level", 0)) in {"0", "1.5"}
}
