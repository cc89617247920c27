"""Interop: the official MCP Python SDK (`mcp` 2.3.0) drives regent while
regent governs real third-party MCP servers: the official filesystem server
(npm) through examples/filesystem and the git server (PyPI mcp-server-git)
through examples/git_server.

Run by .ci/run inside its virtual environment, with the servers it installed:

    FILESYSTEM_SERVER=.../node_modules/.bin/mcp-server-filesystem \\
    GIT_SERVER=.../bin/mcp-server-git \\
    python tests/interop_python/upstreams.py target/debug/regent [--require]

For each server and both protocol eras (the initialize handshake, and
mode="auto" discovering 2026-07-28): the upstream's tools are imported,
`tools/resolve` answers from the team's policy, a call the policy denies
never reaches the server (checked on disk), a confirmed call runs only once
the SDK's elicitation callback accepts, results equal what the same server
answers the SDK directly, and the server killed mid-session makes calls fail
closed until regent has restarted it. A server whose variable is unset is
skipped with a message; with --require a skip is a failure.

The Rust tests (tests/integration/upstream_filesystem.rs, upstream_git.rs)
drive the same examples with rmcp's client; this is the same ground seen by
another SDK, as users' clients will see it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
import interop as base  # noqa: E402  (check, custom: one way to report and to send)

ROOT = Path(__file__).resolve().parents[2]
check = base.check
custom = base.custom


def example(name: str, into: Path, replace: dict[str, str]) -> None:
    """examples/NAME copied into INTO with each key of REPLACE replaced."""
    for f in (ROOT / "examples" / name).iterdir():
        text = f.read_text()
        for old, new in replace.items():
            text = text.replace(old, new)
        (into / f.name).write_text(text)


def dump(result: Any) -> dict[str, Any]:
    """What a client sees of a tool result, without regent's own _meta."""
    d = result.model_dump(by_alias=True, exclude_none=True)
    d.pop("_meta", None)
    return d


def texts(result: Any) -> str:
    return " ".join(c.text for c in result.content if hasattr(c, "text"))


class Asker:
    """An elicitation callback whose answer the test sets; records messages."""

    def __init__(self) -> None:
        self.answer = "accept"
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        from mcp.types import ElicitResult

        self.asked.append(params.message)
        return ElicitResult(action=self.answer, content={} if self.answer == "accept" else None)


async def upstream_pid(client: Client, name: str) -> int | None:
    st = await custom(client, "regent/status", {})
    entry = st.get("upstreams", {}).get(name, {})
    return entry.get("pid") if entry.get("up") else None


async def killed_and_restarted(client: Client, label: str, name: str, tool: str, args: dict[str, Any],
                               served: Any) -> None:
    """Kill upstream NAME; a call fails closed while it is down; regent
    restarts it (a new pid) and the same call is served again."""
    first = await upstream_pid(client, name)
    check(f"{label} regent/status names the upstream's pid", isinstance(first, int), first)
    if not isinstance(first, int):
        return
    os.kill(first, signal.SIGKILL)
    # Until regent has seen the exit a call may still be forwarded to the
    # dying process; each answer must be an error or the real result, and
    # at least one must be the fail-closed error before the restart.
    saw_down = False
    deadline = time.monotonic() + 30
    again = None
    while time.monotonic() < deadline:
        r = await client.call_tool(tool, args)
        if r.is_error and f"upstream `{name}`" in texts(r):
            saw_down = True
        pid = await upstream_pid(client, name)
        if saw_down and isinstance(pid, int) and pid != first:
            again = pid
            break
        await anyio.sleep(0.05)
    check(f"{label} a call while the server is down fails closed, naming it", saw_down)
    check(f"{label} the server is restarted (a new pid)", again is not None, again)
    r = await client.call_tool(tool, args)
    check(f"{label} served again after the restart", not r.is_error and served(r), dump(r))


async def filesystem(binary: str, server: str, mode: str) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        root = (tmp / "root").resolve()
        elsewhere = (tmp / "elsewhere").resolve()
        catalog = tmp / "catalog"
        for d in (root, elsewhere, catalog):
            d.mkdir()
        (root / "notes.txt").write_text("one\ntwo\n")
        example("filesystem", catalog, {"/srv/files": str(root), "command: mcp-server-filesystem": f"command: {server}"})
        label = f"[filesystem {mode}]"

        direct = StdioServerParameters(command=server, args=[str(root)])
        async with Client(direct, mode=mode, read_timeout_seconds=20) as d:
            upstream_tools = {t.name for t in (await d.list_tools()).tools}
            direct_read = dump(await d.call_tool("read_text_file", {"path": str(root / "notes.txt")}))

        asker = Asker()
        params = StdioServerParameters(command=binary, args=["serve", str(catalog)])
        async with Client(params, mode=mode, read_timeout_seconds=20, elicitation_callback=asker) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            check(f"{label} the server's tools are imported", {"read_text_file", "write_file"} <= names
                  and names <= upstream_tools, sorted(names))

            notes = str(root / "notes.txt")
            r = await custom(c, "tools/resolve", {"name": "read_text_file", "arguments": {"path": notes}})
            check(f"{label} a read resolves read-only", r.get("annotations", {}).get("readOnlyHint") is True, r)
            r = await custom(c, "tools/resolve", {"name": "write_file",
                                                   "arguments": {"path": str(root / "x"), "content": "x"}})
            check(f"{label} a write resolves as not read-only", r.get("annotations", {}).get("readOnlyHint") is False, r)

            r = await c.call_tool("read_text_file", {"path": notes})
            check(f"{label} a read's result is the server's, unchanged", dump(r) == direct_read,
                  (dump(r), direct_read))
            check(f"{label} a read never asks", asker.asked == [], asker.asked)

            outside = elsewhere / "x.txt"
            r = await c.call_tool("write_file", {"path": str(outside), "content": "boom"})
            check(f"{label} a write outside the root is denied", r.is_error and "is outside" in texts(r), dump(r))
            check(f"{label} the denied write never reached the server", not outside.exists())
            check(f"{label} a denied call does not ask", asker.asked == [], asker.asked)

            new = root / "new.txt"
            asker.answer = "decline"
            r = await c.call_tool("write_file", {"path": str(new), "content": "hello"})
            check(f"{label} a declined write is refused", r.is_error and "answered decline" in texts(r), dump(r))
            check(f"{label} the declined write never reached the server", not new.exists())
            asker.answer = "accept"
            r = await c.call_tool("write_file", {"path": str(new), "content": "hello"})
            check(f"{label} an accepted write runs once", not r.is_error and new.read_text() == "hello", dump(r))
            check(f"{label} each write asked, naming the file",
                  len(asker.asked) == 2 and all(str(new) in m for m in asker.asked), asker.asked)

            await killed_and_restarted(c, label, "filesystem", "read_text_file", {"path": notes},
                                       lambda r: dump(r) == direct_read)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "a.txt").write_text("first\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    return path.resolve()


async def git_server(binary: str, server: str, mode: str) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        root = repo(tmp / "root")
        elsewhere = repo(tmp / "elsewhere")
        catalog = tmp / "catalog"
        catalog.mkdir()
        example("git_server", catalog, {"/srv/repo": str(root), "command: mcp-server-git": f"command: {server}"})
        label = f"[git {mode}]"
        (root / "a.txt").write_text("first\nsecond\n")

        direct = StdioServerParameters(command=server, args=["--repository", str(root)])
        async with Client(direct, mode=mode, read_timeout_seconds=20) as d:
            direct_status = dump(await d.call_tool("git_status", {"repo_path": str(root)}))
            direct_diff = dump(await d.call_tool("git_diff_unstaged", {"repo_path": str(root)}))

        asker = Asker()
        params = StdioServerParameters(command=binary, args=["serve", str(catalog)])
        async with Client(params, mode=mode, read_timeout_seconds=30, elicitation_callback=asker) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            check(f"{label} the server's tools are imported", {"git_status", "git_commit", "git_add"} <= names,
                  sorted(names))
            r = await custom(c, "tools/resolve", {"name": "git_status", "arguments": {"repo_path": str(root)}})
            check(f"{label} git_status resolves read-only", r.get("annotations", {}).get("readOnlyHint") is True, r)
            for tool, want in (("git_status", direct_status), ("git_diff_unstaged", direct_diff)):
                r = await c.call_tool(tool, {"repo_path": str(root)})
                check(f"{label} {tool}'s result is the server's, unchanged", dump(r) == want, (dump(r), want))

            log_before = git(elsewhere, "log", "--oneline")
            r = await c.call_tool("git_commit", {"repo_path": str(elsewhere), "message": "evil"})
            check(f"{label} a commit outside the root is denied", r.is_error, dump(r))
            check(f"{label} the denied commit never reached the server", git(elsewhere, "log", "--oneline") == log_before)
            check(f"{label} a denied call does not ask", asker.asked == [], asker.asked)

            r = await c.call_tool("git_add", {"repo_path": str(root), "files": ["a.txt"]})
            check(f"{label} staging runs without a question", not r.is_error and asker.asked == [], dump(r))
            asker.answer = "decline"
            r = await c.call_tool("git_commit", {"repo_path": str(root), "message": "second"})
            check(f"{label} a declined commit is refused", r.is_error and len(asker.asked) == 1, dump(r))
            check(f"{label} the declined commit did not happen", "second" not in git(root, "log", "--oneline"))
            asker.answer = "accept"
            r = await c.call_tool("git_commit", {"repo_path": str(root), "message": "second"})
            head = git(root, "rev-parse", "HEAD").strip()
            check(f"{label} an accepted commit runs", not r.is_error and "second" in git(root, "log", "--oneline")
                  and head in texts(r), dump(r))

            await killed_and_restarted(c, label, "git", "git_status", {"repo_path": str(root)},
                                       lambda r: "On branch main" in texts(r))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    binary = str(Path(args[0]).resolve()) if args else str(ROOT / "target" / "debug" / "regent")
    require = "--require" in sys.argv[1:]
    for var, run in (("FILESYSTEM_SERVER", filesystem), ("GIT_SERVER", git_server)):
        server = os.environ.get(var)
        if not server:
            print(f"skipped: {var} is not set")
            if require:
                check(f"{var} is set (--require)", False)
            continue
        server = str(Path(server).resolve())
        for mode in ("legacy", "auto"):
            try:
                with anyio.fail_after(120):
                    await run(binary, server, mode)
            except Exception as e:  # a crash is a failure with its reason, not a traceback wall
                check(f"[{run.__name__} {mode}] session", False, repr(e))
    print(f"upstreams: {base.passed} passed, {base.failed} failed")
    return 1 if base.failed or not base.passed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
