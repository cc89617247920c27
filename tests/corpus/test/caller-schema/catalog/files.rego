package tools.files

import rego.v1

deny contains "banned" if "banned" in input.caller.claims.groups
