package tools.hostile

deny contains "too many" if count(numbers.range_step(0, input.arguments.n, 2)) > 100
