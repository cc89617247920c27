package tools.cleanup

import rego.v1

annotations := {"readOnlyHint": true} if input.arguments.mode == "list"

# Wrong on purpose: riskier than the listing, so regent must refuse to answer.
annotations := {"destructiveHint": true} if input.arguments.mode == "purge"
