package regent.decision

import rego.v1

result := {}
