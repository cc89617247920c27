package lib.pong

import rego.v1

ready if {
	input.arguments.n > 0
	data.tools.ping.ready
}
