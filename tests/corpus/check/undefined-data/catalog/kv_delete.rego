package tools.kv_delete

import rego.v1

# The data says `protected_keys`: this rule never fires.
deny contains "the key is protected" if input.arguments.key in data.kv.protected_key

deny contains "the key is reserved" if data.tools.kv_delet.reserved[input.arguments.key]

# Another tool's package is not in this tool's engine.
deny contains "the key is blocked" if data.tools.kv_get.blocked[input.arguments.key]
