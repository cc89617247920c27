# The library of the git_server example: is a repository path under the
# root? Each tools.git_server.* package is the policy of the tools whose
# arguments have one shape, so every argument it reads is in those tools'
# inputSchema (regent check refuses a reference that is not).
package repo_root

import rego.v1

dir := data.git_server.root

# Under the root: the root itself or below it (the server accepts a
# subdirectory of its repository), absolute, never climbing out with `..`
# (the server resolves paths itself; regent decides on the text it is
# given).
inside(p) if p == dir

inside(p) if {
	startswith(p, concat("", [dir, "/"]))
	not climbs(p)
}

climbs(p) if {
	some segment in split(p, "/")
	segment == ".."
}

outside(p) := sprintf("repository %q is outside %s", [p, dir])
