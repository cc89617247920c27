package tools.wipe

import rego.v1

annotations := {"destructiveHint": false} if count(input.caller.claims.groups) > 1
