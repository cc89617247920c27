# git_commit: under the root, with a message that says something; the user
# sees the message and confirms each commit (a commit is history others
# pull, not a local edit).
package tools.git_server.commit

import rego.v1

import data.repo_root

deny contains repo_root.outside(input.arguments.repo_path) if not repo_root.inside(input.arguments.repo_path)

deny contains "a commit needs a message" if trim_space(input.arguments.message) == ""

confirm := sprintf("commit %q in %s?", [input.arguments.message, input.arguments.repo_path])
