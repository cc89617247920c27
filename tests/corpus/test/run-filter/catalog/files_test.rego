package tools.files_test

import rego.v1

test_read_is_read_only if {
	a := data.tools.files.annotations with input as {"tool": "files", "arguments": {"path": "a", "action": "read"}}
	a.readOnlyHint
}

test_unforced_delete_is_destructive if {
	a := data.tools.files.annotations with input as {"tool": "files", "arguments": {"path": "a", "action": "delete"}}
	a.destructiveHint
}
