package tools.files

import rego.v1

meta := {"io.github.regent/decision": {"allowed": true}, "com.example/ok": 1} if input.arguments.action == "delete"

meta["io.github.regent/security-schemes"] := [] if input.arguments.path == "/x"

deny contains "no deletes" if input.arguments.action == "delete"
