# git_status, git_diff*, git_log, git_show, git_branch: they only read, so
# the repository being under the root is all there is to decide.
package tools.git_server.read

import rego.v1

import data.repo_root

deny contains repo_root.outside(input.arguments.repo_path) if not repo_root.inside(input.arguments.repo_path)
