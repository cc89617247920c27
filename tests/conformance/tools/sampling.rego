# test_sampling asks its client to sample (sampling/createMessage) during
# the call; regent refuses an upstream's sampling unless the tool's policy
# relays it (docs/upstreams.md, "During a call").
package conformance.sampling

import rego.v1

upstream_request := "relay" if input.request.method == "sampling/createMessage"
