package tools.edit

import rego.v1

base := {"list": ["a", "b"], "o": {"k": 1}}

# Removes a key the request names; where it is missing OPA's json.patch is
# an error, never undefined (so the `not` below never holds on it).
patched := json.patch(base, [{"op": "remove", "path": concat("/", ["", "o", input.arguments.key])}])

deny contains "kept" if not patched
