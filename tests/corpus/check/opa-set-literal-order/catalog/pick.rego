package tools.pick

import rego.v1

names := {input.arguments.a, input.arguments.b}

meta := {
	"literal": [x | some x in {input.arguments.a, input.arguments.b}],
	"local": [x | s := {input.arguments.a, "m"}; some x in s],
	"rule": [x | some x in names],
	"ref": [x | x := {input.arguments.b}[_]],
	"sorted": [x | some x in {y | some y in [input.arguments.a, input.arguments.b]}],
	"constant": [x | some x in {"zz", "a"}],
}
