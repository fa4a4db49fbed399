"""The stdio MCP server: the tools registered with the official SDK (``mcp`` 2.x), served
on stdin/stdout until the host closes stdin.

NOTE: stdout carries the protocol only; anything else goes to stderr.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import ValidationError

from ocb import __version__
from ocb.mcp.backend import Backend
from ocb.mcp.errors import invalid_arguments
from ocb.mcp.tools import READ_ONLY, Tools

__all__ = ["INSTRUCTIONS", "READ_ONLY", "build", "serve"]

INSTRUCTIONS = (
    "OpenClawBrain: the agent's long-term memory over a Markdown workspace. Search it "
    "(memory_search) before answering from prior work, cite results as path#Lx-Ly, read "
    "more with memory_get, then report the outcome (memory_feedback) or correct it "
    "(memory_correct): the memory learns from both. Typed facts: memory_recall and "
    "memory_retain; exact current values: kg_get and kg_set; memory_why explains."
)


class _Server(MCPServer):
    """The SDK's server, saying arguments it refuses against a tool's schema in the
    tool's terms (``ocb.mcp.errors.invalid_arguments``)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(invalid_arguments(name, cause)) from cause


def build(backend: Backend) -> MCPServer:
    """The MCP server over ``backend``, with every tool registered."""
    server: MCPServer = _Server(
        "ocb", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    for name, fn in Tools(backend).each():
        ro = name in READ_ONLY
        server.add_tool(
            fn,
            name=name,
            annotations=ToolAnnotations(read_only_hint=ro, destructive_hint=False),
        )
    return server


def serve(backend: Backend) -> None:
    """Serve the tools over ``backend`` on stdin/stdout until stdin closes."""
    anyio.run(build(backend).run_stdio_async)
