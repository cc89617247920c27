# git_status, git_diff*, git_log, git_show, git_branch: they only read, so
# the repository being under the root is all there is to decide.
package tools.git_server.read

import rego.v1

import data.repo_root

deny contains repo_root.outside(input.arguments.repo_path) if not repo_root.inside(input.arguments.repo_path)

# Values git would read as options (see repo_root.option).
deny contains repo_root.option_like("target", input.arguments.target) if repo_root.option(input.arguments.target)

deny contains repo_root.option_like("revision", input.arguments.revision) if repo_root.option(input.arguments.revision)

deny contains repo_root.option_like("contains", input.arguments.contains) if repo_root.option(input.arguments.contains)

deny contains repo_root.option_like("not_contains", input.arguments.not_contains) if repo_root.option(input.arguments.not_contains)
