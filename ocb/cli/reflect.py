"""The ``reflect`` command (rendered by ``ocb.cli.render.memory``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ocb.cli.options import BrainOpt, JsonOpt, handled, open_brain, out, runs

group = typer.Typer()


@group.command()
@runs("write")
@handled
def reflect(
    brain: BrainOpt,
    since: Annotated[
        str, typer.Option(help="Facts recalled since then are priority (30d, 2w, 12h or a date).")
    ] = "7d",
    as_json: JsonOpt = False,
) -> None:
    """Rewrite entity summaries and move opinion confidence (only under bank/).

    \b
    Example:
      ocb reflect --brain B --since 7d
      ocb reflect --brain B --since 2026-11-14 --json
    """
    from ocb.cli.render.memory import reflect_text
    from ocb.wire import reflect_json

    with open_brain(brain) as b:
        report = b.reflect(since)
    out(report, as_json, reflect_text, reflect_json)
