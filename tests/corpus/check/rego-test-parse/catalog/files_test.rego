package tools.files_test

import rego.v1

test_x if {
	1 ==
}
