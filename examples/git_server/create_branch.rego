# git_create_branch: under the root, and named the team's way (feature/...
# or fix/...), so the model cannot create `main` or anything CI deploys
# from. Not asked about: a new branch changes nothing checked out.
package tools.git_server.create_branch

import rego.v1

import data.repo_root

deny contains repo_root.outside(input.arguments.repo_path) if not repo_root.inside(input.arguments.repo_path)

deny contains sprintf("branch %q is not named feature/... or fix/...", [input.arguments.branch_name]) if {
	not regex.match(`^(feature|fix)/[a-z0-9][a-z0-9._-]*$`, input.arguments.branch_name)
}

# Values git would read as options (see repo_root.option).
deny contains repo_root.option_like("branch_name", input.arguments.branch_name) if repo_root.option(input.arguments.branch_name)

deny contains repo_root.option_like("base_branch", input.arguments.base_branch) if repo_root.option(input.arguments.base_branch)
