# read_multiple_files: every one of `paths` must be under the root.
package tools.filesystem.paths

import rego.v1

import data.root

deny contains root.outside(p) if {
	some p in input.arguments.paths
	not root.inside(p)
}
