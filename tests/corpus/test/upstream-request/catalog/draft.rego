package tools.draft

import rego.v1

# The upstream may sample, but only for public topics and a few tokens.
upstream_request := "relay" if {
	input.request.method == "sampling/createMessage"
	input.arguments.topic != "payroll"
	input.request.params.maxTokens <= 100
}

# No URL-mode elicitation: it would send the user elsewhere.
upstream_request := "refuse" if {
	input.request.method == "elicitation/create"
	input.request.params.mode == "url"
}
