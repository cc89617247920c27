"""Interop: the official MCP Python SDK (`mcp` 2.3.0) drives `regent serve`.

Run by .ci/run inside a virtual environment it creates:

    python tests/interop_python/interop.py target/debug/regent

Each check prints one line; the script ends with "N passed, N failed" and
exits non-zero on any failure. It connects twice: once with the initialize
handshake (mode="legacy", protocol 2025-11-25) and once with mode="auto",
which discovers the 2026-07-28 protocol. `tools/resolve` and
`tools/annotations` are not SDK methods, so they go through
`session.send_request` with a generic request type. `tools/call` only reads
(and is denied a path outside the example's root), so the example is left
as it was.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, MCPError, StdioServerParameters
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


async def run(binary: str, mode: str) -> None:
    params = StdioServerParameters(command=binary, args=["serve", str(ROOT / "examples" / "manage_files")])
    async with Client(params, mode=mode, read_timeout_seconds=20) as client:
        era = client.protocol_version
        want_era = "2025-11-25" if mode == "legacy" else "2026-07-28"
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
            check(f"[{mode}] resultType present only in 2026-07-28 ({action})", has_rt == (mode != "legacy"), r)

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


async def main() -> int:
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "debug" / "regent")
    for mode in ("legacy", "auto"):
        try:
            with anyio.fail_after(60):
                await run(binary, mode)
        except Exception as e:  # a crash is a failure with its reason, not a traceback wall
            check(f"[{mode}] session", False, repr(e))
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
