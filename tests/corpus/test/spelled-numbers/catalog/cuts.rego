package tools.cuts

deny contains "cut at c" if substring("abcdef", input.arguments.n, 2) == "cd"
