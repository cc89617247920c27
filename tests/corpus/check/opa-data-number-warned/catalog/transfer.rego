package tools.transfer

import rego.v1

deny contains "over the limit" if input.arguments.amount > data.limits.max
