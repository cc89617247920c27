# edit_file: under the root, and the user confirms each edit; a dry run
# (which only shows the diff, and resolves read-only in filesystem.yaml)
# is not asked about.
package tools.filesystem.edit

import rego.v1

import data.root

deny contains root.outside(input.arguments.path) if not root.inside(input.arguments.path)

confirm := sprintf("edit_file %s?", [input.arguments.path]) if not input.arguments.dryRun == true
