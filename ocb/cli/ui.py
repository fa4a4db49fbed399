"""The ``ui`` command: a local web app onto one brain (``ocb.ui``)."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from ocb.cli.options import handled, runs
from ocb.cli.serve import MaybeBrain, need_brain
from ocb_events.errors import InputError

group = typer.Typer()


@group.command()
@runs("local")
@handled
def ui(
    ctx: typer.Context,
    brain: MaybeBrain = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: a free one).")] = 0,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Do not open the browser; only print the URL.")
    ] = False,
    allow_writes: Annotated[
        bool,
        typer.Option(
            "--allow-writes",
            help="Let the pages score, correct and retract answers (and record queries).",
        ),
    ] = False,
) -> None:
    """Serve a local web app onto the brain: ask, history, why, memory, health.

    The first line printed is the URL to open (with a random token: a request
    without it is refused). It listens on 127.0.0.1 only, shows the live brain
    through its daemon when one runs (in this process otherwise), and records
    nothing unless started with --allow-writes. Ctrl-C stops it. Needs the ui extra.

    \b
    Example:
      ocb ui --brain /tmp/brain
      ocb ui --brain /tmp/brain --port 8765 --no-open --allow-writes
    """
    b = need_brain(brain)
    try:
        from ocb.ui.serve import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("starlette", "uvicorn", "anyio", "h11"):
            raise
        from ocb.brain import Brain

        raise InputError(
            "ocb ui needs the optional ui packages", Brain.install_command("ui")
        ) from None
    from ocb.cli.rpc import CommandLine

    app = CommandLine(ctx.find_root().command)
    try:
        serve(b, port=port, open_browser=not no_open, writes=allow_writes,
              echo=lambda line: print(line, flush=True), app=app, abandon=_abandon)  # fmt: skip
    except KeyboardInterrupt:
        pass


def _abandon() -> None:
    """End the process now (``ocb.ui.serve.serve``: a call is still running on the
    brain, which is left as a crash leaves it: the log whole, nothing half-written)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
