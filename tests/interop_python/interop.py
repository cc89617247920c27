"""Interop: the official MCP Python SDK (`mcp` 2.3.0) drives `regent serve`.

Run by .ci/run inside a virtual environment it creates:

    python tests/interop_python/interop.py target/debug/regent          # stdio
    python tests/interop_python/interop.py target/debug/regent --http   # Streamable HTTP

Each check prints one line; the script ends with "N passed, N failed" and
exits non-zero on any failure. It connects twice: once with the initialize
handshake (mode="legacy", protocol 2025-11-25) and once with mode="auto",
which discovers the 2026-07-28 protocol. `tools/resolve` and
`tools/annotations` are not SDK methods, so they go through
`session.send_request` with a generic request type. `tools/call` only reads
(and is denied a path outside the example's root), so the example is left
as it was.

With --http the script starts `regent serve --http 127.0.0.1:0` itself, with
a bearer token in REGENT_AUTH_TOKEN, and connects the SDK's Streamable HTTP
client to the address regent reports (confirmations included: elicitation
over the session's event stream in 2025-11-25, input_required rounds in
2026-07-28); a client without the token must be turned away.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Request, Result
from pydantic import ConfigDict

ROOT = Path(__file__).resolve().parents[2]
passed = 0
failed = 0


class AnyParams(Result):
    """Request params carried as-is (name, arguments)."""

    model_config = ConfigDict(extra="allow")


class AnyResult(Result):
    """A result kept whole, unknown fields included."""

    model_config = ConfigDict(extra="allow")


def check(label: str, ok: bool, detail: Any = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {label}")
    else:
        failed += 1
        print(f"FAIL  {label}: {detail}")


async def custom(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    req = Request[AnyParams, str](method=method, params=AnyParams(**params))
    result = await client.session.send_request(req, AnyResult)
    return result.model_dump(by_alias=True, exclude_none=True)


SEP_TABLE = {
    "read": (True, False, True),
    "append": (False, False, False),
    "replace": (False, True, True),
    "delete": (False, True, True),
}


class HttpServer:
    """`regent serve --http 127.0.0.1:0 CATALOG` with a bearer token."""

    def __init__(self, binary: str, catalog: Path) -> None:
        self.token = secrets.token_hex(16)
        env = dict(os.environ, REGENT_AUTH_TOKEN=self.token, NO_COLOR="1")
        env.pop("RUST_LOG", None)
        self.proc = subprocess.Popen(
            [binary, "serve", "--http", "127.0.0.1:0", str(catalog)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True,
        )
        self.url = ""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            m = re.search(r"serving MCP at (http://\S+/mcp)", line)
            if m:
                self.url = m.group(1)
                break
        if not self.url:
            raise RuntimeError(f"regent did not start listening (exit {self.proc.poll()})")
        # Keep draining stderr so the server never blocks on a full pipe.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def client(self, token: str | None = "") -> Any:
        """The SDK's Streamable HTTP transport, with this server's token unless told otherwise."""
        token = self.token if token == "" else token
        headers = {"Authorization": f"Bearer {token}"} if token else None
        return streamable_http_client(self.url, http_client=create_mcp_http_client(headers=headers))

    def metric(self, series: str) -> float:
        req = urllib.request.Request(self.url.replace("/mcp", "/metrics"), headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            for line in resp.read().decode().splitlines():
                name, _, value = line.rpartition(" ")
                if name == series:
                    return float(value)
        return 0.0

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=30)


def server_for(binary: str, catalog: Path, http: HttpServer | None) -> Any:
    """What `Client` connects to: regent on stdio, or the HTTP server."""
    return http.client() if http else StdioServerParameters(command=binary, args=["serve", str(catalog)])


async def run(binary: str, mode: str, http: HttpServer | None) -> None:
    server = server_for(binary, ROOT / "examples" / "manage_files", http)
    async with Client(server, mode=mode, read_timeout_seconds=20) as client:
        mode = f"{'http' if http else 'stdio'} {mode}"
        era = client.protocol_version
        want_era = "2025-11-25" if mode.endswith("legacy") else "2026-07-28"
        check(f"[{mode}] negotiated {want_era}", era == want_era, era)

        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        check(f"[{mode}] tools/list names manage_files", names == ["manage_files"], names)
        listed = tools.tools[0]
        extra = listed.model_dump(by_alias=True, exclude_none=True)
        check(f"[{mode}] listed annotations are the worst case", listed.annotations is not None
              and listed.annotations.destructive_hint is True and listed.annotations.read_only_hint is False,
              listed.annotations)
        # This client did not negotiate the tool-resolution extension, so the
        # listing omits its marker (the draft: SHOULD be omitted) and the
        # answers below are SEP-1862's.
        check(f"[{mode}] no extension marker without negotiating it",
              "io.modelcontextprotocol/tool-resolution" not in extra.get("_meta", {}), extra)

        for action, (ro, de, idem) in SEP_TABLE.items():
            args = {"path": "notes.txt", "action": action}
            r = await custom(client, "tools/resolve", {"name": "manage_files", "arguments": args})
            want = {"readOnlyHint": ro, "destructiveHint": de, "idempotentHint": idem, "openWorldHint": False}
            check(f"[{mode}] tools/resolve {action}", r.get("tool", {}).get("annotations") == want
                  and r.get("annotations") == want and r.get("name") == "manage_files", r)
            a = await custom(client, "tools/annotations", {"name": "manage_files", "arguments": args})
            check(f"[{mode}] tools/annotations {action}", a.get("annotations") == want, a)
            has_rt = "resultType" in r
            check(f"[{mode}] resultType present only in 2026-07-28 ({action})", has_rt == (era != "2025-11-25"), r)

        # tools/call runs the tool, and refuses what the policy denies.
        r = await client.call_tool("manage_files", {"path": "notes.txt", "action": "read"})
        body = r.model_dump(by_alias=True, exclude_none=True)
        texts = [c.get("text", "") for c in body.get("content", [])]
        check(f"[{mode}] tools/call read runs the tool",
              r.is_error is False and any("Notes kept by the manage_files example" in t for t in texts), body)
        check(f"[{mode}] tools/call carries its decision id",
              bool(body.get("_meta", {}).get("regent/decision", {}).get("id")), body)
        r = await client.call_tool("manage_files", {"path": "../../etc/passwd", "action": "read"})
        body = r.model_dump(by_alias=True, exclude_none=True)
        decision = body.get("_meta", {}).get("regent/decision", {})
        check(f"[{mode}] tools/call outside the root is denied",
              r.is_error is True and decision.get("allowed") is False
              and decision.get("reasons") == ['path "../../etc/passwd" leaves the root directory'], body)

        try:
            await custom(client, "tools/resolve", {"name": "no_such_tool", "arguments": {}})
            check(f"[{mode}] unknown tool is -32602", False, "no error")
        except MCPError as e:
            check(f"[{mode}] unknown tool is -32602", e.error.code == -32602, e.error)

        try:
            await custom(client, "tools/resolve", {"name": "manage_files", "arguments": {"action": "shred", "path": "x"}})
            check(f"[{mode}] invalid arguments are -32602", False, "no error")
        except MCPError as e:
            errs = (e.error.data or {}).get("errors", [])
            check(f"[{mode}] invalid arguments are -32602 with instance paths",
                  e.error.code == -32602 and errs and errs[0].get("instancePath") == "/action", e.error)


async def negotiated_run(binary: str, mode: str, http: HttpServer | None) -> None:
    """A client that advertises the tool-resolution extension gets the marker
    and the draft's exact answer (see clients/resolve.py for the guide)."""
    from mcp.client.extension import advertise

    server = server_for(binary, ROOT / "examples" / "manage_files", http)
    extensions = [advertise("io.modelcontextprotocol/tool-resolution")]
    async with Client(server, mode=mode, read_timeout_seconds=20, extensions=extensions) as client:
        mode = f"{'http' if http else 'stdio'} {mode} negotiated"
        tools = await client.list_tools()
        extra = tools.tools[0].model_dump(by_alias=True, exclude_none=True)
        check(f"[{mode}] tool carries the extension's resolvable marker",
              extra.get("_meta", {}).get("io.modelcontextprotocol/tool-resolution") == {"resolvable": True}, extra)
        for action, (ro, de, idem) in SEP_TABLE.items():
            args = {"path": "notes.txt", "action": action}
            r = await custom(client, "tools/resolve", {"name": "manage_files", "arguments": args})
            want = {"readOnlyHint": ro, "destructiveHint": de, "idempotentHint": idem, "openWorldHint": False}
            check(f"[{mode}] tools/resolve {action} is the draft's answer exactly",
                  r == {"resultType": "complete", "name": "manage_files", "annotations": want}, r)


def elicit_with(action: str | None):
    """An elicitation callback answering `action`, recording each message."""
    asked: list[str] = []

    async def callback(context: Any, params: Any) -> Any:
        from mcp.types import ElicitResult

        asked.append(params.message)
        return ElicitResult(action=action, content={} if action == "accept" else None)

    return (callback if action else None), asked


async def confirm_run(binary: str, mode: str, over_http: bool) -> None:
    """manage_files asks before replace and delete (docs/elicitation.md)."""
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp())
    example = tmp / "manage_files"
    shutil.copytree(ROOT / "examples" / "manage_files", example)
    target = example / ".root" / "confirm.txt"
    http = HttpServer(binary, example) if over_http else None
    mode = f"{'http' if http else 'stdio'} {mode}"
    for action in ("accept", "decline", "cancel", None):
        target.write_text("old\n")
        callback, asked = elicit_with(action)
        params = server_for(binary, example, http)
        label = f"[{mode}] confirm {action or 'without elicitation capability'}"
        async with Client(params, mode=mode.split()[-1], read_timeout_seconds=20, elicitation_callback=callback) as client:
            args = {"path": "confirm.txt", "action": "replace", "content": "new\n"}
            if action is None:
                try:
                    await client.call_tool("manage_files", args)
                    check(f"{label}: -32021", False, "no error")
                except MCPError as e:
                    check(f"{label}: -32021", e.error.code == -32021 and "elicitation" in e.error.message, e.error)
                check(f"{label}: the tool did not run", target.read_text() == "old\n", target.read_text())
                continue
            r = await client.call_tool("manage_files", args)
            check(f"{label}: asked once", len(asked) == 1 and asked[0].startswith("replace"), asked)
            if action == "accept":
                check(f"{label}: replaced", not r.is_error and target.read_text() == "new\n", r)
            else:
                text = " ".join(c.text for c in r.content if hasattr(c, "text"))
                check(f"{label}: refused", r.is_error and f"answered {action}" in text, r)
                check(f"{label}: the tool did not run", target.read_text() == "old\n", target.read_text())
            r = await client.call_tool("manage_files", {"path": "confirm.txt", "action": "read"})
            check(f"{label}: read never asks", not r.is_error and len(asked) == 1, asked)

            if not mode.endswith("legacy") and action == "accept":
                # Drive the rounds by hand: a tampered or replayed state is refused.
                first = await client.session.call_tool("manage_files", args, allow_input_required=True)
                state = getattr(first, "request_state", None)
                check(f"[{mode}] input_required carries a requestState", bool(state), first)
                answer = {"regent/confirm": {"action": "accept", "content": {}}}
                tampered = state[:-1] + ("A" if state[-1] != "A" else "B")
                for what, call_args, st in (
                    ("tampered requestState", args, tampered),
                    ("requestState replayed with other arguments", {**args, "content": "evil\n"}, state),
                ):
                    target.write_text("old\n")
                    try:
                        await client.session.call_tool("manage_files", call_args, input_responses=answer,
                                                        request_state=st, allow_input_required=True)
                        check(f"[{mode}] {what} is refused", False, "no error")
                    except MCPError as e:
                        check(f"[{mode}] {what} is refused", e.error.code == -32602, e.error)
                    check(f"[{mode}] {what}: the tool did not run", target.read_text() == "old\n",
                          target.read_text())
    if http:
        http.stop()
    shutil.rmtree(tmp)


async def resolvers_run(binary: str, mode: str, over_http: bool) -> None:
    """Parameter resolvers (tests/fixtures/resolvers): the organisation from
    the server's environment, the region from a policy, the approver from
    the user (through the SDK's elicitation callback), the working directory
    from the client's roots (its list_roots callback), and a policy-driven
    confirmation; each question asked once, in both eras."""
    from mcp.types import ElicitResult, ListRootsResult, Root

    catalog = ROOT / "tests" / "fixtures" / "resolvers"
    os.environ["DEPLOY_ORG"] = "eu-acme"
    http = HttpServer(binary, catalog) if over_http else None
    params = http.client() if http else StdioServerParameters(
        command=binary, args=["serve", str(catalog)], env=dict(os.environ))
    mode = f"{'http' if http else 'stdio'} {mode}"
    asked: list[str] = []
    listed: list[int] = []

    async def elicit(context: Any, p: Any) -> Any:
        asked.append(p.message)
        fields = list((p.requested_schema or {}).get("properties", {}))
        if fields == ["approver"]:
            return ElicitResult(action="accept", content={"approver": "alice"})
        return ElicitResult(action="decline" if "frozen" in p.message else "accept", content={})

    async def roots(context: Any) -> Any:
        listed.append(1)
        return ListRootsResult(roots=[Root(uri="file:///srv/work%20tree/")])

    async with Client(params, mode=mode.split()[-1], read_timeout_seconds=20,
                      elicitation_callback=elicit, list_roots_callback=roots) as client:
        tools = await client.list_tools()
        schema = tools.tools[0].input_schema
        check(f"[{mode}] resolved parameters are hidden from tools/list",
              list(schema.get("properties", {})) == ["service"] and schema.get("required") == ["service"], schema)
        r = await client.call_tool("deploy", {"service": "api"})
        text = " ".join(c.text for c in r.content if hasattr(c, "text"))
        check(f"[{mode}] env -> policy -> elicit chain and roots fill the call",
              not r.is_error and text == "api|eu-acme|eu-west-1|alice|/srv/work tree", r)
        check(f"[{mode}] the user was asked once, with what the chain found",
              asked == ["Who approves deploying api to eu-west-1 for eu-acme?"], asked)
        check(f"[{mode}] roots were listed once", len(listed) == 1, listed)
        r = await client.call_tool("deploy", {"service": "billing"})
        check(f"[{mode}] confirmation after the resolvers, approver not asked twice",
              not r.is_error and asked[1:] == ["Who approves deploying billing to eu-west-1 for eu-acme?",
                                               "Deploy billing, approved by alice?"], (r, asked))
        try:
            await client.call_tool("deploy", {"service": "api", "org": "evil"})
            check(f"[{mode}] a server-filled argument from the client is refused", False, "no error")
        except MCPError as e:
            check(f"[{mode}] a server-filled argument from the client is refused",
                  e.error.code == -32602 and "filled by the server" in e.error.message, e.error)
    if http:
        http.stop()


async def refused_without_token(http: HttpServer) -> None:
    """The SDK reports a refused connection as a generic error, so the
    server's own count of 401 answers says why it was refused."""
    series = 'regent_http_responses_total{route="/mcp",code="401"}'
    for token in (None, "wrong-" + http.token):
        label = "without a token" if token is None else "with a wrong token"
        before = http.metric(series)
        try:
            with anyio.fail_after(30):
                async with Client(http.client(token), mode="auto", read_timeout_seconds=10) as client:
                    await client.list_tools()
            check(f"[http] a client {label} is refused", False, "it connected and listed tools")
        except Exception as e:
            after = http.metric(series)
            check(f"[http] a client {label} is refused with 401", after > before, f"{series}: {before} -> {after}; {e!r}")


async def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    binary = args[0] if args else str(ROOT / "target" / "debug" / "regent")
    over_http = "--http" in sys.argv[1:]
    http = HttpServer(binary, ROOT / "examples" / "manage_files") if over_http else None
    for mode in ("legacy", "auto"):
        try:
            with anyio.fail_after(60):
                await run(binary, mode, http)
                await negotiated_run(binary, mode, http)
                await confirm_run(binary, mode, over_http)
                await resolvers_run(binary, mode, over_http)
        except Exception as e:  # a crash is a failure with its reason, not a traceback wall
            check(f"[{'http' if http else 'stdio'} {mode}] session", False, repr(e))
    if http:
        await refused_without_token(http)
        code = http.stop()
        check("[http] SIGTERM stops the server cleanly", code == 0, f"exit {code}")
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
