# A library package (no tool names it) that reads the caller.
package team

import rego.v1

oncall if "oncall" in input.caller.claims.groups

