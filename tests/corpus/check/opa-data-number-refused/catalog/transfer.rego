package tools.transfer

import rego.v1

deny contains sprintf("at most %v", [data.limits.max]) if input.arguments.amount > data.limits.max
