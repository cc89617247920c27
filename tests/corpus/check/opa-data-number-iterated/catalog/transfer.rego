package tools.transfer

import rego.v1

deny contains "over the limit" if input.arguments.amount > data.limits.max

# `x[_]` iterates: its key is never a number of the data or the request.
deny contains "a plain limit" if input.arguments.amount == data.limits.plain[_]
