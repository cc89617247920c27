package tools.files

import rego.v1

annotations := {"destructiveHint": false} if data.kinds[input.arguments.action].safe
