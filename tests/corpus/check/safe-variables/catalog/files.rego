package tools.files

import rego.v1

import data.tools.files.protected

protected := {"/etc", "/boot"}

deny contains msg if {
	some p in protected
	startswith(input.arguments.path, p)
	msg := sprintf("%s is protected", [p])
}

deny contains msg if {
	input.arguments.action == "delete"
	parts := split(input.arguments.path, "/")
	not count(parts) > 2
	msg := concat(" ", [w | some w in parts; w != ""])
}

deny contains "hidden" if {
	some i
	parts := split(input.arguments.path, "/")
	startswith(parts[i], ".")
}

meta := {"owner": owner} if {
	owner := owner_of(input.arguments.path)
}

owner_of(path) := who if {
	who := {x: y | some x, y in {"a": path}}
}

names := {n | some n in split(input.arguments.path, "/")}

first(xs) := x if x := xs[0]
