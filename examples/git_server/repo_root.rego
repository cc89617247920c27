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

# Arguments the server hands to git's command line (a diff target, a
# revision, a branch name) are read by git as options when they start with
# `-`: `git_diff target=--output=/elsewhere/x` would write a file anywhere.
# Each package refuses its own such arguments by name. (The repository is
# fenced by regent; a commit message and staged files never reach git's
# command line.)
option_like(name, v) := sprintf("argument %s %q would be read by git as an option", [name, v])

option(v) if {
	is_string(v)
	startswith(v, "-")
}
