# Per-call behaviour of the github_api tool.
#
# The contract (see the README): `annotations` is merged over the listed
# hints, `meta` into the tool's `_meta`, `security_schemes` replaces the
# listed `securitySchemes`. Undefined rules keep the listed values.
package tools.github_api

import rego.v1

method := input.arguments.method

repository := sprintf("%s/%s", [lower(input.arguments.owner), lower(input.arguments.repo)])

public if repository in {lower(r) | some r in data.github.public_repositories}

# GET only reads, and reading twice changes nothing.
annotations := {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true} if method == "GET"

# POST creates (an issue, a comment): additive, and repeating it creates another.
annotations := {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false} if method == "POST"

# PUT replaces a resource: destructive, but the same PUT twice is the same state.
annotations := {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true} if method == "PUT"

# PATCH overwrites fields; applying it again may not be a no-op for every endpoint.
annotations := {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false} if method == "PATCH"

# DELETE removes; deleting twice leaves the same state.
annotations := {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true} if method == "DELETE"

# Reading a public repository needs no credentials at all.
security_schemes := [{"type": "noauth"}] if {
	method == "GET"
	public
}

# Writing to a public repository needs only the narrower `public_repo` scope.
security_schemes := [{"type": "oauth2", "scopes": ["public_repo"]}] if {
	method != "GET"
	public
}

# Anything else, private or unknown, needs the full `repo` scope.
security_schemes := [{"type": "oauth2", "scopes": ["repo"]}] if not public

meta := {
	"io.github/repository": repository,
	"io.github/visibility": visibility,
	"io.github/requiredScopes": scopes,
}

visibility := "public" if public

else := "private-or-unknown"

scopes := [] if {
	method == "GET"
	public
} else := ["public_repo"] if {
	public
} else := ["repo"]
