# A library package under `data.kinds`, which the tool reads by a key
# chosen at run time; this one reads the caller.
package kinds.read

import rego.v1

safe if input.caller.claims.role == "reader"
