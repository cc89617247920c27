#!/bin/sh
# verify.sh 'REGO-BODY' 'ARGS-JSON': one construct, one input, raw answers of regent (wire) and OPA, plus regent check.
set -e
D=$(mktemp -d /tmp/huntv.XXXX)
printf 'tools:\n  - name: t\n    description: v\n    inputSchema: {type: object}\n    policy: tools.t\n' > $D/t.yaml
printf 'package tools.t\n\nimport rego.v1\n\n%s\n' "$1" > $D/t.rego
R=$(cd "$(dirname "$0")/../.." && pwd)
printf '%s\n%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"v","version":"1"}}}' \
  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/resolve\",\"params\":{\"name\":\"t\",\"arguments\":$2}}" \
  | timeout 20 ${REGENT:-$R/target/debug/regent} serve $D 2>$D/err | grep '"id":1' | python3 -c 'import sys,json; r=json.loads(sys.stdin.read()); print("regent:", json.dumps(r.get("result",{}).get("_meta") or r.get("error"), ensure_ascii=False))'
grep -o '"error":"[^"]*' $D/err | head -1 || true
python3 -c 'import json,sys; print(json.dumps({"load":{"modules":[["t.rego",open(sys.argv[1]).read()]]}})); print(json.dumps({"eval":["data.tools.t.meta","data.tools.t.deny"],"input_text":"{\"tool\":\"t\",\"arguments\":"+sys.argv[2]+"}"}))' $D/t.rego "$2" \
  | ${OPA_PYTHON:-/tmp/opavenv/bin/python} $R/tests/opa/oracle.py | tail -1 | sed 's/^/opa: /'
${REGENT:-$R/target/debug/regent} check $D 2>&1 | grep -E 'warning|error' | grep -v 'proof does not cover' | sed 's/^/check: /' || true
