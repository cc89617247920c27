package tools.fine

import rego.v1

upstream_request := "relay" if input.request.method == "sampling/createMessage"
