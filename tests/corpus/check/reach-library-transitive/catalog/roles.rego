# A library package the tool imports, which refers to another.
package roles

import rego.v1

reader if not data.team.oncall
