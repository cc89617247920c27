package tools.t
annotations := {"readOnlyHint": true}
