package tools.levels

deny contains concat("", ["level ", json.marshal(input.caller.claims.level)]) if input.caller.claims.level > 1
