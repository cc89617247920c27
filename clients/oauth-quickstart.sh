#!/usr/bin/env bash
# OAuth quick start: regent as an OAuth-protected MCP server, end to end, on
# this machine only (docs/http.md, "Authorization"). With openssl, curl and
# python3's standard library it
#
#   1. makes an RSA key, its JWKS file and a signed RS256 access token
#      (iss, aud = the resource, sub, iat, exp, scope);
#   2. starts `regent serve --http 127.0.0.1:PORT` on examples/manage_files
#      with --jwt-jwks-file and the --oauth-* flags;
#   3. fetches the protected resource metadata (RFC 9728) with curl;
#   4. shows the 401 a request without a token gets, and its
#      WWW-Authenticate header naming the metadata;
#   5. calls tools/list and tools/resolve with curl and the token;
#   6. does the same through the official MCP Python SDK, when $PYTHON is a
#      python with mcp installed (CI passes its venv's).
#
# It exits non-zero as soon as a step's output is not what it should be, and
# stops regent and removes its files however it ends.
#
#   clients/oauth-quickstart.sh                 # regent: target/debug/regent
#   REGENT=path/to/regent PYTHON=venv/bin/python clients/oauth-quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."

REGENT=${REGENT:-target/debug/regent}
ISSUER=https://idp.example.com
SCOPES="tools:read tools:call"

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/regent.log" ] && sed 's/^/  regent: /' "$work/regent.log" >&2
  exit 1
}
# base64url without padding (RFC 7515), from stdin.
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

[ -x "$REGENT" ] || fail "$REGENT is not an executable; build it with cargo build, or set REGENT"

step "1. an RSA key, its JWKS file and a signed token"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/key.pem" 2>/dev/null
openssl rsa -in "$work/key.pem" -noout -text 2>/dev/null | grep -q "publicExponent: 65537" \
  || fail "openssl made a key whose exponent is not 65537"
n=$(openssl rsa -in "$work/key.pem" -noout -modulus | cut -d= -f2 \
  | python3 -c 'import sys, binascii; sys.stdout.buffer.write(binascii.unhexlify(sys.stdin.read().strip()))' \
  | b64url)
printf '{"keys":[{"kty":"RSA","kid":"quickstart","use":"sig","alg":"RS256","n":"%s","e":"AQAB"}]}\n' "$n" >"$work/jwks.json"
echo "JWKS: $work/jwks.json"

# A free port, so that the resource identifier is the URL clients use.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
resource="$base/mcp"
document="$base/.well-known/oauth-protected-resource/mcp"

now=$(date +%s)
header=$(printf '{"alg":"RS256","typ":"JWT","kid":"quickstart"}' | b64url)
claims=$(printf '{"iss":"%s","aud":"%s","sub":"quickstart-user","iat":%d,"exp":%d,"scope":"%s"}' \
  "$ISSUER" "$resource" "$now" "$((now + 600))" "$SCOPES" | b64url)
signature=$(printf '%s.%s' "$header" "$claims" | openssl dgst -sha256 -sign "$work/key.pem" -binary | b64url)
token="$header.$claims.$signature"
echo "token for aud=$resource, sub=quickstart-user, scope=\"$SCOPES\" (10 minutes)"

step "2. regent serve --http 127.0.0.1:$port with JWT verification and --oauth-resource"
"$REGENT" serve --http "127.0.0.1:$port" \
  --jwt-jwks-file "$work/jwks.json" \
  --jwt-issuer "$ISSUER" \
  --oauth-resource "$resource" \
  --oauth-scopes-supported tools:read,tools:call \
  examples/manage_files 2>"$work/regent.log" &
pid=$!
for _ in $(seq 100); do
  grep -q "serving MCP at" "$work/regent.log" && break
  kill -0 "$pid" 2>/dev/null || fail "regent exited before serving"
  sleep 0.1
done
grep -q "serving MCP at" "$work/regent.log" || fail "regent did not start serving within 10 s"
grep "serving MCP at" "$work/regent.log"

step "3. the protected resource metadata, without a token: GET $document"
curl -sS -D "$work/meta.head" -o "$work/meta.json" "$document" || fail "cannot fetch $document"
cat "$work/meta.json"; echo
head -1 "$work/meta.head" | grep -q " 200" || fail "the metadata answered $(head -1 "$work/meta.head")"
python3 - "$work/meta.json" "$resource" "$ISSUER" <<'PY' || fail "the metadata document is not the expected one"
import json, sys
doc = json.load(open(sys.argv[1]))
want = {"resource": sys.argv[2], "authorization_servers": [sys.argv[3]],
        "scopes_supported": ["tools:read", "tools:call"], "bearer_methods_supported": ["header"]}
sys.exit(0 if doc == want else f"got {doc}, want {want}")
PY

# What every MCP request below sends (the 2026-07-28 era: one POST per
# request, no session).
mcp() { # mcp METHOD PARAMS [curl args...]
  local method=$1 params=$2
  shift 2
  curl -sS -X POST "$resource" \
    -H "Content-Type: application/json" \
    -H "Accept: application/json, text/event-stream" \
    -H "MCP-Protocol-Version: 2026-07-28" \
    -H "Mcp-Method: $method" \
    "$@" \
    --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$method\",\"params\":$params}"
}
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"oauth-quickstart","version":"1"}}'

step "4. tools/list without a token: 401, and where to look"
mcp tools/list "{$META}" -o /dev/null -D "$work/401.head" || fail "cannot reach $resource"
tr -d "\r" <"$work/401.head" | grep -iE "^HTTP|^www-authenticate" || true
head -1 "$work/401.head" | grep -q " 401" || fail "without a token the answer was $(head -1 "$work/401.head")"
grep -qiF "www-authenticate: Bearer realm=\"regent\", resource_metadata=\"$document\", scope=\"$SCOPES\"" "$work/401.head" \
  || fail "the 401's WWW-Authenticate does not name the metadata and scopes"

step "5. tools/list and tools/resolve with the token (curl)"
mcp tools/list "{$META}" -H "Authorization: Bearer $token" >"$work/list.json" || fail "tools/list failed"
python3 - "$work/list.json" <<'PY' || fail "tools/list did not list manage_files"
import json, sys
r = json.load(open(sys.argv[1]))
names = [t["name"] for t in r.get("result", {}).get("tools", [])]
print("tools/list:", names)
sys.exit(0 if names == ["manage_files"] else f"unexpected answer: {r}")
PY
mcp tools/resolve "{\"name\":\"manage_files\",\"arguments\":{\"path\":\"notes.txt\",\"action\":\"read\"},$META}" \
  -H "Authorization: Bearer $token" >"$work/resolve.json" || fail "tools/resolve failed"
python3 - "$work/resolve.json" <<'PY' || fail "tools/resolve did not resolve read as read-only"
import json, sys
r = json.load(open(sys.argv[1]))
a = r.get("result", {}).get("annotations", {})
print("tools/resolve read:", a)
sys.exit(0 if a.get("readOnlyHint") is True and a.get("destructiveHint") is False else f"unexpected answer: {r}")
PY

step "6. the same through the MCP Python SDK, with the Authorization header"
if [ -z "${PYTHON:-}" ]; then
  echo "skipped: set PYTHON to a python with the MCP SDK (pip install mcp==2.3.0) to run this step"
else
  "$PYTHON" - "$resource" "$token" <<'PY' || fail "the Python SDK client did not get the expected answers"
import asyncio, sys
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Request, Result
from pydantic import ConfigDict


class Loose(Result):
    model_config = ConfigDict(extra="allow")


async def main(url: str, token: str) -> None:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=20) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        print(client.protocol_version, "tools/list:", names)
        req = Request[Loose, str](method="tools/resolve",
                                  params=Loose(name="manage_files", arguments={"path": "notes.txt", "action": "delete"}))
        r = (await client.session.send_request(req, Loose)).model_dump(by_alias=True, exclude_none=True)
        print(client.protocol_version, "tools/resolve delete:", r.get("annotations"))
        if names != ["manage_files"] or r.get("annotations", {}).get("destructiveHint") is not True:
            sys.exit(f"unexpected answers: {names}, {r}")


asyncio.run(main(sys.argv[1], sys.argv[2]))
PY
fi

echo
echo "oauth quick start: every step answered as expected"
