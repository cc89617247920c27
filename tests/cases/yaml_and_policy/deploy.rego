package tools.deploy

import rego.v1

# Services named in data.json never reach outside the cluster.
annotations := {"openWorldHint": false} if input.arguments.service in data.internal_services

meta := {"example.com/cost": 3} if input.arguments.env == "prod"
