package tools.spin_test

import data.tools.spin

test_small_is_read_only if spin.annotations.readOnlyHint with input as {"arguments": {"n": 3}}

test_large_runs_too_long if spin.annotations.readOnlyHint with input as {"arguments": {"n": 20000}}
