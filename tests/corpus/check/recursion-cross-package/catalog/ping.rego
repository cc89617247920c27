package tools.ping

import rego.v1

import data.lib.pong

annotations := {"readOnlyHint": true} if ready

ready if pong.ready
