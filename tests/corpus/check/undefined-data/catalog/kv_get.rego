package tools.kv_get

import rego.v1

blocked contains "secrets"
