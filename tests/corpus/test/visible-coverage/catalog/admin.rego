package tools.admin

import rego.v1

staff if input.caller.claims.employment == "staff"

visible if staff

deny contains "no target" if input.arguments.target == ""
