# git_checkout: under the root, and confirmed: switching branches rewrites
# the working tree a person may be looking at.
package tools.git_server.checkout

import rego.v1

import data.repo_root

deny contains repo_root.outside(input.arguments.repo_path) if not repo_root.inside(input.arguments.repo_path)

confirm := sprintf("switch %s to %s?", [input.arguments.repo_path, input.arguments.branch_name])

# Values git would read as options (see repo_root.option).
deny contains repo_root.option_like("branch_name", input.arguments.branch_name) if repo_root.option(input.arguments.branch_name)
