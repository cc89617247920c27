package tools.files

import rego.v1

limits := {"a": 1}

kinds := {k | some k in input.arguments.kinds}

deny contains "owned" if not is_null(input.arguments.owner)

deny contains sprintf("tag %v", [t]) if {
	some t in input.arguments.tags
	t == "x"
}

deny contains "kinds" if kinds > limits

deny contains "every" if {
	"" in input.arguments.kinds with input.tool as input.tool
}

deny contains "portable" if {
	owner := input.arguments.owner
	not is_null(owner)
	not startswith(input.arguments.path, "/")
	is_array(input.arguments.tags)
	some t in input.arguments.tags
	t == "y"
}

deny contains "blocked" if {
	every k in input.arguments.kinds { not input.arguments.tags[k] }
}
