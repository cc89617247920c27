"""Interop: an upstream's requests during a forwarded call (issue 29 item 1),
with the official MCP Python SDK (`mcp` 2.3.0) on both sides: a Python SDK
upstream server (this file, run with --upstream) whose `ask` tool sends its
client an elicitation (form mode), `roots/list` and `sampling/createMessage`
during the call, governed by regent, driven by the Python SDK client with
elicitation, roots and sampling callbacks, over stdio and `serve --http`.

    python tests/interop_python/upstream_requests.py target/debug/regent

Checked, on 2025-11-25 sessions: the elicitation reaches the client's
callback and its answer reaches the upstream; roots likewise; sampling is
refused by default (the callback is never called) and relayed when the
tool's `upstream_request` rule allows it; each decision is a decision-log
line with the call's id; a client without the callbacks is not asked. The
same on 2026-07-28 (mode="auto"), where each relayed request is an
`input_required` round the SDK's client drives through the same callbacks
(regent parks the upstream call between rounds).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

if "--upstream" in sys.argv:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.types import SamplingMessage, TextContent

    server = MCPServer("ask-upstream")

    @server.tool()
    async def ask(ask: list[str], ctx: Context) -> str:
        """Asks the client, then answers with what it got."""
        session = ctx.request_context.session
        got: dict[str, Any] = {}
        for what in ask:
            try:
                if what == "elicit":
                    r = await session.elicit_form(
                        "pick a colour",
                        {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]},
                        related_request_id=ctx.request_id,
                    )
                elif what == "roots":
                    r = await session.list_roots()
                elif what == "sample":
                    r = await session.create_message(
                        [SamplingMessage(role="user", content=TextContent(type="text", text="say hi"))],
                        max_tokens=10,
                        related_request_id=ctx.request_id,
                    )
                else:
                    continue
                got[what] = {"result": r.model_dump(by_alias=True, exclude_none=True, mode="json")}
            except Exception as e:  # the error regent sent, as the SDK raised it
                error = getattr(e, "error", None)
                got[what] = {"error": {"code": getattr(error, "code", None), "message": getattr(error, "message", str(e))}}
        return json.dumps(got)

    server.run("stdio")
    sys.exit(0)

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent  # noqa: E402

import interop as base  # noqa: E402

check = base.check

POLICY = """package tools.ask

import rego.v1

upstream_request := "relay" if {
\tinput.request.method == "sampling/createMessage"
\t"allow_sample" in input.arguments.ask
}
"""


def write_catalog(into: Path) -> None:
    me = Path(__file__).resolve()
    (into / "upstreams.yaml").write_text(
        "upstreams:\n"
        "  - name: py\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(me))}, --upstream]\n"
        "    env: {inherit: [PATH, HOME, PYTHONPATH]}\n"
        "    tools:\n"
        "      - name: ask\n"
        "        policy: tools.ask\n"
    )
    (into / "ask.rego").write_text(POLICY)


class Http:
    """`regent serve --http 127.0.0.1:0` with a decision log."""

    def __init__(self, binary: str, catalog: Path, log: Path) -> None:
        env = dict(os.environ, NO_COLOR="1")
        env.pop("RUST_LOG", None)
        self.proc = subprocess.Popen(
            [binary, "serve", "--http", "127.0.0.1:0", "--decision-log", str(log), str(catalog)],
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
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def lines(log: Path) -> list[dict[str, Any]]:
    out = []
    for line in log.read_text().splitlines() if log.exists() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("kind") == "upstream_request":
            out.append(entry)
    return out


async def session(binary: str, mode: str, over_http: bool, capable: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dir = Path(tmp)
        write_catalog(dir)
        log = dir / "decisions.log"
        http = Http(binary, dir, log) if over_http else None
        params = streamable_http_client(http.url) if http else StdioServerParameters(
            command=binary, args=["serve", "--decision-log", str(log), str(dir)], env=dict(os.environ))
        label = f"[{'http' if http else 'stdio'} {mode}{'' if capable else ' no callbacks'}]"
        asked: list[str] = []
        sampled: list[int] = []

        async def elicit(context: Any, p: Any) -> Any:
            asked.append(p.message)
            return ElicitResult(action="accept", content={"colour": "blue"})

        async def roots(context: Any) -> Any:
            return ListRootsResult(roots=[Root(uri="file:///work/")])

        async def sample(context: Any, p: Any) -> Any:
            sampled.append(1)
            return CreateMessageResult(role="assistant", model="test-model",
                                       content=TextContent(type="text", text="hi there"))

        callbacks = dict(elicitation_callback=elicit, list_roots_callback=roots, sampling_callback=sample) \
            if capable else {}
        try:
            async with Client(params, mode=mode, read_timeout_seconds=30, **callbacks) as client:
                async def ask(*what: str) -> tuple[dict[str, Any], str]:
                    r = await client.call_tool("ask", {"ask": list(what)})
                    body = r.model_dump(by_alias=True, exclude_none=True)
                    text = " ".join(c.get("text", "") for c in body.get("content", []))
                    try:
                        got = json.loads(text)
                    except ValueError:
                        got = {"unparsed": body}
                    return got, body.get("_meta", {}).get("regent/decision", {}).get("id", "")

                if not capable:
                    got, _ = await ask("elicit", "roots", "sample", "allow_sample")
                    for what, capability in (("elicit", "elicitation"), ("roots", "roots"), ("sample", "sampling")):
                        message = got.get(what, {}).get("error", {}).get("message", "")
                        check(f"{label} {what}: the upstream is told the client cannot answer",
                              f"did not declare the {capability} capability" in message, got)
                    return
                got, id = await ask("elicit", "roots", "sample")
                check(f"{label} the elicitation reached the callback and its answer the upstream",
                      got.get("elicit", {}).get("result", {}).get("content") == {"colour": "blue"}
                      and asked == ["pick a colour"], (got, asked))
                check(f"{label} roots reached the upstream",
                      got.get("roots", {}).get("result", {}).get("roots", [{}])[0].get("uri") == "file:///work/", got)
                message = got.get("sample", {}).get("error", {}).get("message", "")
                check(f"{label} sampling is refused by default, the callback never called",
                      "by default" in message and not sampled, got)
                got2, id2 = await ask("sample", "allow_sample")
                check(f"{label} sampling is relayed when the policy allows it",
                      got2.get("sample", {}).get("result", {}).get("content", {}).get("text") == "hi there"
                      and sampled == [1], got2)
                seen = [(e.get("id"), e.get("method"), e.get("decision")) for e in lines(log)]
                want = [(id, "elicitation/create", "allowed"), (id, "roots/list", "allowed"),
                        (id, "sampling/createMessage", "denied"), (id2, "sampling/createMessage", "allowed")]
                check(f"{label} each decision is a decision-log line with the call's id", seen == want, seen)
        finally:
            if http:
                http.stop()


async def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    binary = args[0] if args else str(base.ROOT / "target" / "debug" / "regent")
    for over_http in (False, True):
        for mode, capable in (("legacy", True), ("legacy", False), ("auto", True), ("auto", False)):
            try:
                with anyio.fail_after(60):
                    await session(binary, mode, over_http, capable)
            except Exception as e:  # a crash is a failure with its reason
                check(f"[{'http' if over_http else 'stdio'} {mode}] session", False, repr(e))
    print(f"upstream requests: {base.passed} passed, {base.failed} failed")
    return 1 if base.failed or not base.passed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
