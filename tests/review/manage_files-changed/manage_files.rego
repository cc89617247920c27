# Calls of manage_files that must not run, as conftest-style reasons.
#
# Every command runs in the root directory the tool file declares
# (`cwd: root`), with `path` as one argument. A path stays inside the root
# when it is relative and never climbs out with `..`; anything else is
# denied here, so tools/resolve reports it before the call and tools/call
# refuses it without running anything.
package tools.manage_files

import rego.v1

path := input.arguments.path

deny contains "path is empty" if path == ""

# Replace and delete destroy what was there: the user confirms each one
# before tools/call runs it (docs/elicitation.md).
confirm := sprintf("overwrite %q under the root directory? This cannot be undone.", [path]) if {
	input.arguments.action == "replace"
}

deny contains "append is disabled during the freeze" if input.arguments.action == "append"

deny contains sprintf("path %q is absolute; paths are relative to the root directory", [path]) if {
	startswith(path, "/")
}

deny contains sprintf("path %q leaves the root directory", [path]) if {
	some segment in split(path, "/")
	segment == ".."
}

deny contains sprintf("%s needs `content`", [input.arguments.action]) if {
	input.arguments.action in {"append", "replace"}
	not "content" in object.keys(input.arguments)
}
