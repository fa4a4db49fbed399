"""The ``warm`` command (rendered by ``ocb.cli.render.warm``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ocb.cli.options import BrainOpt, JsonOpt, handled, open_brain, out, runs

group = typer.Typer()


@group.command()
@runs("write", dry_run_reads=True)
@handled
def warm(
    brain: BrainOpt,
    sessions: Annotated[
        list[Path],
        typer.Option(help="A session JSONL file, or a directory of *.jsonl (repeatable)."),
    ],
    corrections: Annotated[
        bool,
        typer.Option(
            "--corrections", help="Record a message correcting an answer as a CORRECTION."
        ),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count, record nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Warm a brain from an agent's past transcripts (OpenClaw session JSONL).

    Each user message and the answer that followed is recorded as the query it asks,
    with an outcome (source harvester) when the transcript shows what the answer used:
    the fired chunks it cites (path#L12-L20), quotes (8 words in a row), or read with
    memory_get are used (+1); a next message saying it was wrong (-1) is a correction
    candidate, recorded as a CORRECTION with --corrections; cited lines that no fired
    chunk holds are missed (-1); nothing else scores it. Flat {"role", "content"} lines
    are read too. Turns already warmed are skipped, so running it again (after new
    turns, or after it was stopped) records only what is new.

    \b
    Example:
      ocb warm --sessions ~/.openclaw/agents/main/sessions --brain /tmp/brain
      ocb warm --sessions old.jsonl --sessions chats/ --brain /tmp/brain --corrections
      ocb warm --sessions chats/ --brain /tmp/brain --dry-run --json
    """
    from ocb.cli.progress import ProgressBar
    from ocb.cli.render.warm import warm_text
    from ocb.wire import warm_json

    bar = ProgressBar()
    with open_brain(brain, writer=not dry_run) as b:
        report = b.warm_sessions(sessions, corrections=corrections, dry_run=dry_run, progress=bar)
    bar.close()
    out(report, as_json, warm_text, warm_json)
