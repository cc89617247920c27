package tools.hostile

deny contains msg if msg := sprintf(input.arguments.format, [1])
