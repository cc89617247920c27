# write_file, create_directory: under the root, and the user confirms each
# call.
package tools.filesystem.write

import rego.v1

import data.root

deny contains root.outside(input.arguments.path) if not root.inside(input.arguments.path)

confirm := sprintf("%s %s?", [input.tool, input.arguments.path])
