package tools.query

import rego.v1

deny contains "DELETE is not allowed" if input.arguments.request.mehtod == "DELETE"

deny contains "no credentials in headers" if {
	some h in input.arguments.headers
	lower(h.name) == "authorization"
	input.arguments.headers[_].vaule != ""
}

deny contains "the url is not a field" if input.arguments.request.url.host == "evil"
