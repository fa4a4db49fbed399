"""The ``mcp`` command: the brain as a stdio MCP server for agent hosts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ocb.cli.options import handled, runs
from ocb.cli.serve import MaybeBrain, need_brain
from ocb_events.errors import InputError

if TYPE_CHECKING:
    from ocb.mcp.backend import Backend

group = typer.Typer()

NoDaemon = Annotated[
    bool,
    typer.Option(
        "--no-daemon",
        envvar="OCB_NO_DAEMON",
        help="Open the brain in this process instead of attaching to (or starting) a daemon.",
    ),
]


@group.command()
@runs("local")
@handled
def mcp(
    brain: MaybeBrain = None,
    workspace: Annotated[
        Path | None,
        typer.Option(help="Workspace a started daemon watches (default: the brain's own)."),
    ] = None,
    no_daemon: NoDaemon = False,
) -> None:
    """Serve a brain to an agent host as an MCP server on stdin/stdout.

    Tools: memory_search, memory_get, memory_recall, memory_retain, memory_feedback,
    memory_correct, memory_why, kg_get, kg_set. Calls go to the daemon serving the
    brain, started (as `ocb serve --detach`) when none runs; with --no-daemon the
    brain is opened in this process instead. Needs the mcp extra.

    \b
    In an MCP host's configuration:
      {"mcpServers": {"ocb": {"command": "ocb", "args": ["mcp", "--brain", "/tmp/brain"]}}}

    \b
    Example:
      ocb mcp --brain /tmp/brain
      ocb mcp --brain /tmp/brain --no-daemon
    """
    from ocb.mcp import backend

    serve = _server()
    b = need_brain(brain)
    if no_daemon:
        with backend.in_process(b) as local:
            serve(local)
        return
    serve(backend.attach(b, workspace.absolute() if workspace is not None else None))


def _server() -> Callable[[Backend], None]:
    """``ocb.mcp.server.serve``, imported here rather than at the top because the mcp
    package is an optional extra: without it every other command works, and this one
    says how to get it."""
    try:
        from ocb.mcp.server import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "pydantic", "anyio"):
            raise
        from ocb.brain import Brain

        raise InputError(
            "ocb mcp needs the optional mcp package", Brain.install_command("mcp")
        ) from None
    return serve
