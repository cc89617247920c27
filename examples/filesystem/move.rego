# move_file: both ends under the root, and the user confirms each move.
package tools.filesystem.move

import rego.v1

import data.root

deny contains root.outside(input.arguments.source) if not root.inside(input.arguments.source)

deny contains root.outside(input.arguments.destination) if not root.inside(input.arguments.destination)

confirm := sprintf("move %s to %s?", [input.arguments.source, input.arguments.destination])
