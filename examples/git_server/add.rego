# git_add: under the root, and each file named relative to the repository
# without climbing out of it. Not asked about: staging only changes the
# index (git_reset undoes it), and the commit that records it is confirmed.
package tools.git_server.add

import rego.v1

import data.repo_root

deny contains repo_root.outside(input.arguments.repo_path) if not repo_root.inside(input.arguments.repo_path)

deny contains sprintf("%q is not a path inside the repository", [f]) if {
	some f in input.arguments.files
	escapes(f)
}

escapes(f) if startswith(f, "/")

escapes(f) if repo_root.climbs(f)
