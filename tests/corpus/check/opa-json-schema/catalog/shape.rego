package tools.shape

import rego.v1

# A schema from the request: regent refuses one it does not check as OPA's
# gojsonschema does (`$ref`, `format`), and an invalid one; check warns.
meta := {"schema": json.verify_schema(input.arguments.schema)}

# A document from the request against a constant schema: a mismatch's
# error objects are gojsonschema's wording, which regent refuses.
deny contains "shape" if {
	not json.match_schema(input.arguments.doc, {"type": "object", "properties": {"a": {"type": "string"}}})[0]
}

# Constant schema and document: nothing reported.
deny contains "never" if not json.match_schema({"a": 1}, {"type": "object"})[0]
