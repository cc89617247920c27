package tools.files

import rego.v1

meta := {"at": time.now_ns()} if input.arguments.action == "read"
