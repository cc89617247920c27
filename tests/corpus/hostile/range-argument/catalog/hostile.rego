package tools.hostile

deny contains "batch too large" if count(numbers.range(1, input.arguments.n)) > 100
