package tools.kv_put

import data.kv
import data.lib.kv as lib
import input.arguments as args
import rego.v1

deny contains "the key is protected" if lib.protected(input.arguments.key)

deny contains "the key is protected" if args.key in kv.protected_keys

# Dynamic parts stop the check.
deny contains "over the limit" if data.kv.limits[input.arguments.key].max < 2

deny contains "red" if input.arguments.tags[_].color == "red"

deny contains "red" if input.arguments.tags.anything.color == "red"

deny contains "ttl" if input.arguments.options.ttl > 10

deny contains "anything below additionalProperties: true" if input.arguments.options.a.b.c

deny contains "anything below an object without properties" if input.arguments.extra.x.y

deny contains "anything below an empty schema" if input.arguments.value.nested

deny contains "a branch of anyOf" if input.arguments.target.table == "users"

deny contains "array items" if input.arguments.items[0].id == "x"

deny contains "tool" if input.tool == "other"

deny contains "rules and packages" if {
	data.tools.kv_put.hidden
	data.lib.kv.key_tagged
	count(data.kv.owners) > 3
}

hidden if input.arguments.key == ".hidden"
