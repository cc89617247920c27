package tools.writes

deny contains concat("", ["n is ", json.marshal(input.arguments.n)]) if input.arguments.n > 1
