package tools.deploy

import rego.v1

deny contains "never" if false
