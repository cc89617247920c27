package tools.batch

import rego.v1

# `some i` bound inside a call's argument runs on regorus, where regent
# cannot see which comparison meets a number past a double's digits: any
# request holding one fails closed.
deny contains "an entry is a number" if {
	some i
	is_number(input.arguments.entries[i])
}
