package tools.odd

import rego.v1

# A boolean is not an answer: every request of the upstream is refused.
upstream_request := true if input.request.method == "roots/list"
