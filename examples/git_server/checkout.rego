# git_checkout: under the root, and confirmed: switching branches rewrites
# the working tree a person may be looking at.
package tools.git_server.checkout

import rego.v1

import data.repo_root

deny contains repo_root.outside(input.arguments.repo_path) if not repo_root.inside(input.arguments.repo_path)

confirm := sprintf("switch %s to %s?", [input.arguments.repo_path, input.arguments.branch_name])
