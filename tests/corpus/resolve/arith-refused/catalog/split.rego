package tools.split

import rego.v1

deny contains "the parts must add up to 0.3" if input.arguments.a + input.arguments.b != 0.3

deny contains sprintf("a third of a is %v", [input.arguments.a / 3]) if input.arguments.a > 1
