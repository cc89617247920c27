# A library package no tool imports (nor reaches through `data.`): it
# reads the caller too, and counts toward no proof.
package audit

import rego.v1

watched if input.caller.claims.watched == true

