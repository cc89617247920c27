# Named hint sets for the common kinds of operation, so that policies say
# what an operation is rather than spelling out four booleans each time.
#
#     import data.lib.hints
#     annotations := hints.read_only if input.arguments.action == "read"
#
# Serve this directory beside your catalog: `regent serve policies/lib my-tools/`.
package lib.hints

import rego.v1

# Reads only: safe to repeat, changes nothing.
read_only := {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true}

# Adds something new (a file, a comment, an issue); repeating adds another.
additive := {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false}

# Overwrites or deletes to a fixed end state; repeating changes nothing more.
destructive_idempotent := {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true}

# Overwrites or deletes, and repeating may do more damage.
destructive := {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false}

# Stays on this machine.
closed_world := {"openWorldHint": false}
