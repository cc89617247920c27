package tools.picks

deny contains "third" if ["a", "b", "c"][input.arguments.n] == "c"
