# The library of the filesystem example: is a path under the root? Each
# tools.filesystem.* package is the policy of the tools whose arguments
# have one shape, so every argument it reads is in those tools'
# inputSchema (regent check refuses a reference that is not).
package root

import rego.v1

dir := data.filesystem.root

# Under the root: the root itself or below it, absolute, never climbing
# out with `..` (the server resolves paths itself; regent decides on the
# text it is given).
inside(p) if p == dir

inside(p) if {
	startswith(p, concat("", [dir, "/"]))
	not climbs(p)
}

climbs(p) if {
	some segment in split(p, "/")
	segment == ".."
}

outside(p) := sprintf("%q is outside %s", [p, dir])
