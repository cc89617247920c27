package tools.write

import rego.v1

annotations := {"destructiveHint": true} if regex.match(`^/etc/[a-z]+$`, input.arguments.path)
