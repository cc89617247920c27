"""The hunt corpus: one construct per policy, written as a security team would.

Each entry: (name, rego body after the package header, kinds).
`kinds` biases argument generation: {"a": "str", "b": "int"} means a is drawn
from the string pool 70% of the time (else from anything, including absent).
A: input.arguments.a, B: input.arguments.b, C: input.arguments.c.
"""

C = []


def c(name, body, kinds=None, schema=None):
    C.append((name, body.strip() + "\n", kinds or {}, schema))


# --- negation over possibly-undefined arguments (issue examples) ---
c("not_is_null", """
annotations := {"readOnlyHint": true} if not is_null(input.arguments.a)
deny contains "a is set" if not is_null(input.arguments.a)
""")
c("not_fn_undefined", """
is_ok(x) if x == "ok"
annotations := {"destructiveHint": false} if not is_ok(input.arguments.a)
""", {"a": "str"})
c("not_count_gt", """
deny contains "too many" if not count(input.arguments.a) > 2
""", {"a": "coll"})
c("not_startswith_lower", """
deny contains "not admin" if not startswith(lower(input.arguments.a), "adm")
""", {"a": "str"})
c("not_bare_ref", """
deny contains "no a" if not input.arguments.a
""")
# --- strings ---
c("count_str", 'meta := {"r": count(input.arguments.a)}', {"a": "str"})
c("sprintf_d", 'meta := {"r": sprintf("%d", [input.arguments.a])}', {"a": "num"})
c("sprintf_v", 'meta := {"r": sprintf("%v", [input.arguments.a])}')
c("sprintf_s_f", 'meta := {"r": sprintf("%s/%.2f", [input.arguments.a, input.arguments.b])}', {"a": "str", "b": "num"})
c("upper", 'meta := {"r": upper(input.arguments.a)}', {"a": "str"})
c("lower_eq_admin", """
meta := {"r": lower(input.arguments.a)}
deny contains "admin" if lower(input.arguments.a) == "admin"
""", {"a": "str"})
c("indexof", 'meta := {"r": indexof(input.arguments.a, input.arguments.b)}', {"a": "str", "b": "str"})
c("indexof_empty", 'meta := {"r": indexof(input.arguments.a, "")}', {"a": "str"})
c("substring", 'meta := {"r": substring(input.arguments.a, input.arguments.b, input.arguments.c)}', {"a": "str", "b": "int", "c": "int"})
c("to_number", 'meta := {"r": to_number(input.arguments.a)}', {"a": "numstr"})
c("to_number_guard", """
deny contains "big" if to_number(input.arguments.a) > 10
""", {"a": "numstr"})
c("replace", 'meta := {"r": replace(input.arguments.a, input.arguments.b, input.arguments.c)}', {"a": "str", "b": "str", "c": "str"})
c("split", 'meta := {"r": split(input.arguments.a, input.arguments.b)}', {"a": "str", "b": "str"})
c("split_empty", 'meta := {"r": split(input.arguments.a, "")}', {"a": "str"})
c("strings_reverse", 'meta := {"r": strings.reverse(input.arguments.a)}', {"a": "str"})
c("trim_family", 'meta := {"r": [trim(input.arguments.a, input.arguments.b), trim_left(input.arguments.a, input.arguments.b), trim_right(input.arguments.a, input.arguments.b), trim_prefix(input.arguments.a, input.arguments.b), trim_suffix(input.arguments.a, input.arguments.b)]}', {"a": "str", "b": "str"})
c("trim_space", 'meta := {"r": trim_space(input.arguments.a)}', {"a": "str"})
c("startswith_endswith", """
deny contains "prefix" if startswith(input.arguments.a, input.arguments.b)
deny contains "suffix" if endswith(input.arguments.a, input.arguments.b)
""", {"a": "str", "b": "str"})
c("contains_strcount", 'meta := {"c": contains(input.arguments.a, input.arguments.b), "n": strings.count(input.arguments.a, input.arguments.b)}', {"a": "str", "b": "str"})
c("concat", 'meta := {"r": concat(",", input.arguments.a)}', {"a": "arr"})
c("format_int", 'meta := {"r": format_int(input.arguments.a, 16)}', {"a": "num"})
c("regex_match_const", 'deny contains "word" if regex.match(`^\\w+$`, input.arguments.a)', {"a": "str"})
c("regex_match_pat", 'meta := {"r": regex.match(input.arguments.b, input.arguments.a)}', {"a": "str", "b": "pat"})
c("glob_match", 'meta := {"r": [glob.match(input.arguments.b, ["."], input.arguments.a), glob.match(input.arguments.b, [], input.arguments.a)]}', {"a": "str", "b": "glob"})
c("json_marshal", 'meta := {"r": json.marshal(input.arguments.a)}')
c("json_unmarshal", 'meta := {"r": json.unmarshal(input.arguments.a)}', {"a": "jsonstr"})
c("base64", 'meta := {"e": base64.encode(input.arguments.a), "d": base64.decode(input.arguments.b)}', {"a": "str", "b": "b64"})
c("urlquery", 'meta := {"e": urlquery.encode(input.arguments.a), "d": urlquery.decode(input.arguments.a)}', {"a": "str"})
# --- collections ---
c("object_get_path", 'meta := {"r": object.get(input.arguments.a, input.arguments.b, "none")}', {"a": "obj", "b": "path"})
c("set_ops", """
meta := {"u": sa | sb, "i": sa & sb, "d": sa - sb} if {
	is_array(input.arguments.a)
	is_array(input.arguments.b)
	sa := {x | some x in input.arguments.a}
	sb := {x | some x in input.arguments.b}
}
""", {"a": "arr", "b": "arr"})
c("array_concat", 'meta := {"r": array.concat(input.arguments.a, input.arguments.b)}', {"a": "arr", "b": "arr"})
c("object_union", 'meta := {"r": object.union(input.arguments.a, input.arguments.b)}', {"a": "obj", "b": "obj"})
c("sort_mixed", 'meta := {"r": sort([input.arguments.a, set(), {}, [], "s", 1, null, true])}')
c("order_sets", 'meta := {"r": [{} < set(), input.arguments.a < set(), input.arguments.a < {}, set() < input.arguments.a]}')
c("compare_args", 'meta := {"lt": input.arguments.a < input.arguments.b, "eq": input.arguments.a == input.arguments.b}', {"a": "num", "b": "num"})
c("max_min_sum", 'meta := {"max": max(input.arguments.a), "min": min(input.arguments.a), "sum": sum(input.arguments.a)}', {"a": "arr"})
c("some_in_scalar", """
deny contains x if {
	some x in input.arguments.a
	is_string(x)
}
""")
c("in_as_value", 'meta := {"r": input.arguments.b in input.arguments.a}', {"a": "arr"})
c("some_kv_object", """
deny contains k if {
	some k, v in input.arguments.a
	v == true
}
""", {"a": "obj"})
c("every", """
annotations := {"readOnlyHint": true} if {
	every x in input.arguments.a {
		is_string(x)
	}
}
""", {"a": "arr"})
c("comprehension", 'meta := {"r": [y | some x in input.arguments.a; y := x]}', {"a": "arr"})
c("else_chain", """
level := "high" if input.arguments.a > 10
else := "mid" if input.arguments.a > 5
else := "low"

confirm := sprintf("level %s", [level]) if level != "low"
""", {"a": "num"})
c("default_allow", """
default ok := false
ok if to_number(input.arguments.a) < 100
deny contains "not ok" if not ok
""", {"a": "numstr"})
# --- numbers ---
c("arith_add_mul", 'meta := {"add": input.arguments.a + input.arguments.b, "mul": input.arguments.a * input.arguments.b}', {"a": "num", "b": "num"})
c("arith_div", 'meta := {"r": input.arguments.a / input.arguments.b}', {"a": "num", "b": "num"})
c("arith_mod", 'meta := {"r": input.arguments.a % input.arguments.b}', {"a": "num", "b": "num"})
c("round_ceil_floor_abs", 'meta := {"r": [round(input.arguments.a), ceil(input.arguments.a), floor(input.arguments.a), abs(input.arguments.a)]}', {"a": "num"})
c("num_eq_literal", 'deny contains "one" if input.arguments.a == 1', {"a": "num"})
# --- misc builtins ---
c("time_parse", 'meta := {"r": time.parse_rfc3339_ns(input.arguments.a)}', {"a": "time"})
c("units_parse_bytes", 'meta := {"r": units.parse_bytes(input.arguments.a)}', {"a": "units"})
c("units_parse", 'meta := {"r": units.parse(input.arguments.a)}', {"a": "units"})
c("net_cidr_contains", 'meta := {"r": net.cidr_contains(input.arguments.a, input.arguments.b)}', {"a": "cidr", "b": "cidr"})
c("semver", 'meta := {"v": semver.is_valid(input.arguments.a), "c": semver.compare(input.arguments.a, input.arguments.b)}', {"a": "semver", "b": "semver"})
c("type_name", 'meta := {"r": type_name(input.arguments.a)}')
c("object_remove_keys", 'meta := {"r": object.remove(input.arguments.a, input.arguments.b)}', {"a": "obj", "b": "arr"})
c("array_slice", 'meta := {"r": array.slice(input.arguments.a, input.arguments.b, input.arguments.c)}', {"a": "arr", "b": "int", "c": "int"})
c("regex_split_find", 'meta := {"s": regex.split(input.arguments.b, input.arguments.a), "f": regex.find_n(input.arguments.b, input.arguments.a, -1)}', {"a": "str", "b": "pat"})
c("crypto_hex", 'meta := {"h": crypto.sha256(input.arguments.a), "x": hex.encode(input.arguments.a)}', {"a": "str"})
c("walk_count", 'meta := {"r": count([p | walk(input.arguments.a, [p, _])])}')
c("strings_any_prefix", 'deny contains "p" if strings.any_prefix_match(input.arguments.a, ["/etc", "/root"])', {"a": "str"})
c("indexof_n", 'meta := {"r": indexof_n(input.arguments.a, input.arguments.b)}', {"a": "str", "b": "str"})
c("confirm_msg", 'confirm := input.arguments.a if is_string(input.arguments.a)', {"a": "str"})
c("conflict_fn", """
f(x) := "s" if is_string(x)
f(x) := "n" if is_number(x)
f(x) := "z" if x == 0
meta := {"r": f(input.arguments.a)}
""", {"a": "num"})
# typed variants: the schema declares the argument, so regent validates before the policy
c("typed_count", 'meta := {"r": count(input.arguments.a)}', {"a": "str"},
  {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
c("typed_not_is_null", 'deny contains "set" if not is_null(input.arguments.a)', {"a": "str"},
  {"type": "object", "properties": {"a": {"type": "string"}}})
c("typed_some_in", """
deny contains x if {
	some x in input.arguments.a
	x == "rm"
}
""", {"a": "arr"}, {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}})
c("typed_arith", 'meta := {"r": input.arguments.a / 3}', {"a": "num"},
  {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]})
# --- round 2: more builtins a security team reaches for ---
c("r2_time_date_add", 'meta := {"d": time.date(input.arguments.a), "w": time.weekday(input.arguments.a), "a": time.add_date(input.arguments.a, 0, 1, 0)}', {"a": "num"})
c("r2_cidr_intersects", 'meta := {"i": net.cidr_intersects(input.arguments.a, input.arguments.b), "v": net.cidr_is_valid(input.arguments.a)}', {"a": "cidr", "b": "cidr"})
c("r2_base64url", 'meta := {"d": base64url.decode(input.arguments.a), "e": base64url.encode_no_pad(input.arguments.a)}', {"a": "b64"})
c("r2_urlquery_object", 'meta := {"r": urlquery.decode_object(input.arguments.a)}', {"a": "str"})
c("r2_json_is_valid", 'meta := {"j": json.is_valid(input.arguments.a), "r": regex.is_valid(input.arguments.a)}', {"a": "pat"})
c("r2_replace_n", 'meta := {"r": strings.replace_n({"a": "b", "ß": "ss", "": "x"}, input.arguments.a)}', {"a": "str"})
c("r2_object_keys_filter", 'meta := {"k": object.keys(input.arguments.a), "f": object.filter(input.arguments.a, ["a", "k"])}', {"a": "obj"})
c("r2_numbers_range", """
meta := {"r": numbers.range(input.arguments.a, input.arguments.b)} if {
	abs(input.arguments.a) < 50
	abs(input.arguments.b) < 50
}
""", {"a": "int", "b": "int"})
c("r2_array_reverse", 'meta := {"r": array.reverse(input.arguments.a)}', {"a": "arr"})
c("r2_glob_quote", 'meta := {"q": glob.quote_meta(input.arguments.a), "m": glob.match(glob.quote_meta(input.arguments.a), [], input.arguments.a)}', {"a": "str"})
c("r2_sprintf_mixed", 'meta := {"r": sprintf("%x %q %t %5.1s|", [input.arguments.a, input.arguments.b, input.arguments.c, input.arguments.b])}', {"a": "int", "b": "str", "c": "str"})
c("r2_uuid_parse", 'meta := {"r": uuid.parse(input.arguments.a)}', {"a": "str"})
c("r2_strings_lower_keys", 'deny contains "admin" if { some k, _ in input.arguments.a; lower(k) == "admin" }', {"a": "obj"})
c("r2_any_all", 'annotations := {"readOnlyHint": true} if { count(input.arguments.a) > 0; every x in input.arguments.a { startswith(x, "/tmp/") } }', {"a": "arr"})
c("r2_bits", 'meta := {"r": [bits.and(input.arguments.a, input.arguments.b), bits.lsh(input.arguments.a, 2), bits.negate(input.arguments.a)]}', {"a": "int", "b": "int"})
c("r2_units_neg", 'deny contains "too big" if units.parse_bytes(input.arguments.a) > 1000000', {"a": "units"})
