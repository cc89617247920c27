#!/usr/bin/env bash
# What JWT verification and per-call scope enforcement cost over HTTP
# (issue 30): `wrk` against `regent serve --http` with an RS256 token on
# every request, 2026-07-28 stateless POSTs of `tools/resolve` and of
# `tools/call` (a tool that runs `cat` on a small file), one connection at
# a time and 16 at once, for each binary given, interleaved round by round
# so that both see the same machine.
#
#   benches/http_auth.sh [--rounds N] [--seconds S] BIN...
#
# Each BIN is run three ways when it knows the flags (`--enforce-scopes` is
# new in issue 30; older binaries run the first two only):
#   plain   no authentication
#   jwt     --jwt-jwks-file, every request carrying the token
#   scopes  the same with --enforce-scopes (the tool lists an oauth2 scheme
#           with scope `files:read`, which the token has)
# Prints one line per cell and round: requests/s and p50/p99 latency.
# Needs wrk, openssl, python3. Traffic stays on 127.0.0.1.
set -euo pipefail

rounds=3
seconds=5
bins=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || { echo "usage: $0 [--rounds N] [--seconds S] BIN..." >&2; exit 2; }
command -v wrk >/dev/null || { echo "error: wrk is not installed (apt-get install wrk)" >&2; exit 2; }

work=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

# The catalog: one tool that reads a file, its listed scheme naming a scope.
mkdir -p "$work/catalog"
echo "hello" >"$work/file.txt"
cat >"$work/catalog/tools.yaml" <<EOF
tools:
  - name: read_file
    description: Reads one file
    inputSchema:
      type: object
      properties:
        path: {type: string}
      required: [path]
    annotations:
      readOnlyHint: true
      destructiveHint: false
      idempotentHint: true
      openWorldHint: false
    securitySchemes:
      - type: oauth2
        scopes: [files:read]
    run:
      cli:
        program: cat
        args: ["--", "{path}"]
EOF

# An RSA key, its JWKS, a token (an hour) for the audience below.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/key.pem" 2>/dev/null
n=$(openssl rsa -in "$work/key.pem" -noout -modulus | cut -d= -f2 \
  | python3 -c 'import sys, binascii; sys.stdout.buffer.write(binascii.unhexlify(sys.stdin.read().strip()))' | b64url)
printf '{"keys":[{"kty":"RSA","kid":"bench","use":"sig","alg":"RS256","n":"%s","e":"AQAB"}]}\n' "$n" >"$work/jwks.json"
issuer=https://idp.example.com
audience=https://regent.example.com/mcp
now=$(date +%s)
header=$(printf '{"alg":"RS256","typ":"JWT","kid":"bench"}' | b64url)
claims=$(printf '{"iss":"%s","aud":"%s","sub":"bench","iat":%d,"exp":%d,"scope":"files:read"}' \
  "$issuer" "$audience" "$now" "$((now + 3600))" | b64url)
sig=$(printf '%s.%s' "$header" "$claims" | openssl dgst -sha256 -sign "$work/key.pem" -binary | b64url)
token="$header.$claims.$sig"

meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}'
# wrk scripts: one fixed POST each, with or without the token.
write_lua() { # NAME METHOD PARAMS AUTH
  local auth=""
  [ "$4" = yes ] && auth="wrk.headers[\"Authorization\"] = \"Bearer $token\""
  cat >"$work/$1.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "$2"
wrk.headers["Mcp-Name"] = "read_file"
$auth
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"$2","params":$3}'
done = function(summary, latency, requests)
  io.write(string.format("%.0f req/s  p50 %.0f us  p99 %.0f us  errors %d/%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99),
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.requests))
end
EOF
}
args="{\"path\":\"$work/file.txt\"}"
for a in no yes; do
  write_lua "resolve-$a" tools/resolve "{\"name\":\"read_file\",\"arguments\":$args,$meta}" $a
  write_lua "call-$a" tools/call "{\"name\":\"read_file\",\"arguments\":$args,$meta}" $a
done

start() { # BIN FLAGS...
  local bin=$1; shift
  "$bin" serve --http 127.0.0.1:0 --decision-log /dev/null --max-concurrent-calls 64 "$@" "$work/catalog" 2>"$work/log" &
  pid=$!
  for _ in $(seq 200); do
    addr=$(grep -o "serving MCP at http://[0-9.:]*" "$work/log" | head -1 | sed 's/.*http:\/\///') || true
    [ -n "${addr:-}" ] && return 0
    sleep 0.05
  done
  echo "error: $bin did not start:" >&2; cat "$work/log" >&2; exit 1
}
stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; }

jwt=(--jwt-jwks-file "$work/jwks.json" --jwt-issuer "$issuer" --jwt-audience "$audience")
for round in $(seq "$rounds"); do
  for bin in "${bins[@]}"; do
    modes=(plain jwt)
    "$bin" serve --help | grep -q -- --enforce-scopes && modes+=(scopes)
    for mode in "${modes[@]}"; do
      case $mode in
        plain) start "$bin"; auth=no ;;
        jwt) start "$bin" "${jwt[@]}"; auth=yes ;;
        scopes) start "$bin" "${jwt[@]}" --enforce-scopes; auth=yes ;;
      esac
      for method in resolve call; do
        for conns in 1 16; do
          printf 'round %s  %-40s %-6s %-7s c=%-2s ' "$round" "$bin" "$mode" "$method" "$conns"
          wrk -t 1 -c "$conns" -d "${seconds}s" --latency -s "$work/$method-$auth.lua" "http://$addr/mcp" | tail -1
        done
      done
      stop
    done
  done
done
