package lib.kv

import rego.v1

# A library package: checked against the union of every tool's inputSchema.
protected(key) if key in data.kv.protected_keys

key_tagged if input.arguments.tags
