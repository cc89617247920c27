# git_reset: under the root, and confirmed: it unstages everything at once,
# including what a person staged by hand (the server calls it destructive).
package tools.git_server.reset

import rego.v1

import data.repo_root

deny contains repo_root.outside(input.arguments.repo_path) if not repo_root.inside(input.arguments.repo_path)

confirm := sprintf("unstage everything in %s?", [input.arguments.repo_path])
