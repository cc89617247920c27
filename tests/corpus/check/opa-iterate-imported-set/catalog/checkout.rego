package tools.checkout

import rego.v1

import data.lib

# Iterating another package's partial set rule, through the import and
# through data: a collection either way, so no opa-iterate-scalar.
deny contains m if some m in lib.option_like

deny contains m if some m in data.lib.option_like
