package tools.search

import rego.v1

deny contains "hidden files are not searched" if startswith(input.argument.name, ".")

deny contains "wrong tool" if input.tool_name != "search"
