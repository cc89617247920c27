package tools.hostile

deny contains "deep" if count(json.unmarshal(input.arguments.doc)) > 5
