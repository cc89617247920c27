package tools.transfer

import rego.v1

deny contains "a test account" if substring(input.arguments.account, data.limits.skip, 4) == "test"
