package tools.deploy

import rego.v1

import input.caller as who

# Each of these is undefined on every request, so the rule never fires and
# the policy fails open.
deny contains "no caller" if not input.caler

deny contains "not alice" if input.caller.subjcet != "alice"

deny contains "contractor" if input.caller.subject.employment == "contractor"

deny contains "untrusted" if who.isuer == "https://untrusted.example"

deny contains "not on call" if not "oncall" in input.caller.groups
