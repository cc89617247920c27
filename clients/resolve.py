"""tools/resolve from the official MCP Python SDK (mcp 2.3.0), negotiating
io.modelcontextprotocol/tool-resolution. Tested by .ci/run:

    python clients/resolve.py target/debug/regent [legacy|auto]
"""

import asyncio
import sys
from pathlib import Path
from typing import Any, Literal

# README: begin (the README quotes from here to `README: end` verbatim; .ci/clients checks)
from mcp import Client, StdioServerParameters
from mcp.client.extension import advertise
from mcp.types import Request, RequestParams, Result
from pydantic import ConfigDict


class ResolveParams(RequestParams):
    name: str
    arguments: dict[str, Any]


class ResolveRequest(Request[ResolveParams, Literal["tools/resolve"]]):
    method: Literal["tools/resolve"] = "tools/resolve"


class ResolveResult(Result):
    """The draft's answer, exactly: anything else fails validation."""

    model_config = ConfigDict(extra="forbid")
    result_type: Literal["complete"]
    name: str
    annotations: dict[str, bool]


async def main(regent: str, mode: str) -> dict[str, dict[str, bool]]:
    catalog = Path(__file__).resolve().parents[1] / "examples" / "manage_files"
    server = StdioServerParameters(command=regent, args=["serve", str(catalog)])
    extensions = [
        advertise("io.modelcontextprotocol/tool-resolution"),  # the draft's answers
        advertise("io.github.regent/decision"),  # regent's decision under _meta
    ]
    resolved = {}
    async with Client(server, mode=mode, extensions=extensions) as client:
        for action in ("read", "delete"):
            params = ResolveParams(name="manage_files", arguments={"path": "notes.txt", "action": action})
            r = await client.session.send_request(ResolveRequest(params=params), ResolveResult)
            print(client.protocol_version, action, r.annotations, r.meta)
            resolved[action] = r.annotations
    return resolved
# README: end


if __name__ == "__main__":
    regent = sys.argv[1] if len(sys.argv) > 1 else "target/debug/regent"
    mode = sys.argv[2] if len(sys.argv) > 2 else "auto"
    resolved = asyncio.run(main(regent, mode))
    if resolved["read"]["readOnlyHint"] is not True or resolved["delete"]["destructiveHint"] is not True:
        sys.exit(f"unexpected annotations: {resolved}")
