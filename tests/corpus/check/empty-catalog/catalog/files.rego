# A policy, but no tool file declares a tool that uses it: the path given
# to check is most likely the wrong one.
package tools.files

import rego.v1

default annotations := {}
