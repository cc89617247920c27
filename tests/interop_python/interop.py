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


def elicit_with(action: str | None):
    """An elicitation callback answering `action`, recording each message."""
    asked: list[str] = []

    async def callback(context: Any, params: Any) -> Any:
        from mcp.types import ElicitResult

        asked.append(params.message)
        return ElicitResult(action=action, content={} if action == "accept" else None)

    return (callback if action else None), asked


async def confirm_run(binary: str, mode: str) -> None:
    """manage_files asks before replace and delete (docs/elicitation.md)."""
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp())
    example = tmp / "manage_files"
    shutil.copytree(ROOT / "examples" / "manage_files", example)
    target = example / ".root" / "confirm.txt"
    for action in ("accept", "decline", "cancel", None):
        target.write_text("old\n")
        callback, asked = elicit_with(action)
        params = StdioServerParameters(command=binary, args=["serve", str(example)])
        label = f"[{mode}] confirm {action or 'without elicitation capability'}"
        async with Client(params, mode=mode, read_timeout_seconds=20, elicitation_callback=callback) as client:
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

            if mode != "legacy" and action == "accept":
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
    shutil.rmtree(tmp)


async def main() -> int:
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "debug" / "regent")
    for mode in ("legacy", "auto"):
        try:
            with anyio.fail_after(60):
                await run(binary, mode)
                await confirm_run(binary, mode)
        except Exception as e:  # a crash is a failure with its reason, not a traceback wall
            check(f"[{mode}] session", False, repr(e))
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
