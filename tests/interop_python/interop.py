"""Interop: the official MCP Python SDK (`mcp` 2.3.0) drives `regent serve`.

Run by .ci/run inside a virtual environment it creates:

    python tests/interop_python/interop.py target/debug/regent          # stdio
    python tests/interop_python/interop.py target/debug/regent --http   # Streamable HTTP

Each check prints one line; the script ends with "N passed, N failed" and
exits non-zero on any failure. It connects twice: once with the initialize
handshake (mode="legacy", protocol 2025-11-25) and once with mode="auto",
which discovers the 2026-07-28 protocol. `tools/resolve` and
`tools/annotations` are not SDK methods, so they go through
`session.send_request` with a generic request type.

With --http the script starts `regent serve --http 127.0.0.1:0` itself, with
a bearer token in REGENT_AUTH_TOKEN, and connects the SDK's Streamable HTTP
client to the address regent reports; a client without the token must be
turned away.
"""

from __future__ import annotations

import asyncio
import os
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


CATALOG = str(ROOT / "examples" / "manage_files")


def stdio_server(binary: str) -> Any:
    return StdioServerParameters(command=binary, args=["serve", CATALOG])


class HttpServer:
    """`regent serve --http 127.0.0.1:0` with a bearer token, for the whole run."""

    def __init__(self, binary: str) -> None:
        self.token = secrets.token_hex(16)
        env = dict(os.environ, REGENT_AUTH_TOKEN=self.token, NO_COLOR="1")
        env.pop("RUST_LOG", None)
        self.proc = subprocess.Popen(
            [binary, "serve", "--http", "127.0.0.1:0", CATALOG],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True,
        )
        self.url = ""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if "serving MCP at http://" in line:
                self.url = "http://" + line.split("serving MCP at http://", 1)[1].split()[0]
                break
        if not self.url:
            raise RuntimeError(f"regent did not start listening (exit {self.proc.poll()})")
        # Keep draining stderr so the server never blocks on a full pipe.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def client(self, token: str | None) -> Any:
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


async def run(server: Any, mode: str, label: str) -> None:
    async with Client(server, mode=mode, read_timeout_seconds=20) as client:
        mode = f"{label} {mode}"
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
        check(f"[{mode}] tool carries the extension's resolvable marker",
              extra.get("_meta", {}).get("io.modelcontextprotocol/tool-resolution") == {"resolvable": True}, extra)

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


async def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    binary = args[0] if args else str(ROOT / "target" / "debug" / "regent")
    http = HttpServer(binary) if "--http" in sys.argv[1:] else None
    for mode in ("legacy", "auto"):
        label = "http" if http else "stdio"
        try:
            with anyio.fail_after(60):
                await run(http.client(http.token) if http else stdio_server(binary), mode, label)
        except Exception as e:  # a crash is a failure with its reason, not a traceback wall
            check(f"[{label} {mode}] session", False, repr(e))
    if http:
        # The SDK reports a refused connection as a generic error, so the
        # server's own count of 401 answers says why it was refused.
        for token in (None, "wrong-" + http.token):
            label = "without a token" if token is None else "with a wrong token"
            series = 'regent_http_responses_total{route="/mcp",code="401"}'
            before = http.metric(series)
            try:
                with anyio.fail_after(30):
                    async with Client(http.client(token), mode="auto", read_timeout_seconds=10) as client:
                        await client.list_tools()
                check(f"[http] a client {label} is refused", False, "it connected and listed tools")
            except Exception as e:
                after = http.metric(series)
                check(f"[http] a client {label} is refused with 401", after > before, f"{series}: {before} -> {after}; {e!r}")
        code = http.stop()
        check("[http] SIGTERM stops the server cleanly", code == 0, f"exit {code}")
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
