# Path helpers for policies that guard file access.
#
#     import data.lib.paths
#     deny contains "path leaves the root" if not paths.within(input.arguments.path)
#
# Paths are judged lexically, as a shell would before touching the disk: a
# policy cannot read the file system, so symlinks inside the root are the
# running tool's business, not the policy's.
package lib.paths

import rego.v1

# The segments of `p`, without empty and `.` segments.
segments(p) := [s | some s in split(p, "/"); s != ""; s != "."]

# Whether relative path `p` stays inside the directory it is relative to:
# not absolute, no NUL byte, and no prefix that climbs above the start
# (`a/../../b` climbs; `a/../b` does not).
within(p) if {
	not startswith(p, "/")
	not contains(p, "\u0000")
	segs := segments(p)
	count(segs) > 0
	every k in numbers.range(1, count(segs)) {
		_depth(array.slice(segs, 0, k)) >= 0
	}
}

_depth(segs) := count([s | some s in segs; s != ".."]) - count([s | some s in segs; s == ".."])
