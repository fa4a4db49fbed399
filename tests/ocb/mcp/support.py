"""What the MCP tests share: spawning ``ocb mcp`` under the SDK's own stdio client and
calling a tool that must answer, or must fail with a tool error."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from tests.ocb.daemon.support import DEADLINE, ROOT, env

__all__ = ["ok", "refused", "run_mcp", "text_of"]


def run_mcp(
    brain: Path, errlog: Path, *args: str, check: Any, before: tuple[str, ...] = ()
) -> None:
    """Spawn ``ocb *before mcp --brain brain *args`` and run ``check(session)`` against it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ocb.entry", *before, "mcp", "--brain", str(brain), *args],
        env=env(),
        cwd=str(ROOT),
    )

    async def go() -> None:
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
                await asyncio.wait_for(s.initialize(), DEADLINE)
                await check(s)

    try:
        asyncio.run(go())
    except BaseException:
        print(errlog.read_text(), file=sys.stderr)  # the server's stderr, on failure
        raise


async def ok(s: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    got = await asyncio.wait_for(s.call_tool(tool, args), DEADLINE)
    assert not got.is_error, text_of(got)
    assert got.structured_content is not None
    return got.structured_content


async def refused(s: ClientSession, tool: str, args: dict[str, Any]) -> str:
    got = await asyncio.wait_for(s.call_tool(tool, args), DEADLINE)
    assert got.is_error, got.structured_content
    return text_of(got)


def text_of(got: CallToolResult) -> str:
    return "\n".join(c.text for c in got.content if isinstance(c, TextContent))
