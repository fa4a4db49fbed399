"""The ``compact`` and ``show`` commands (rendered by ``ocb.cli.render.compact``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ocb.cli.options import AsOfOpt, BrainOpt, JsonOpt, handled, open_brain, out, runs

group = typer.Typer()


@group.command()
@runs("write", dry_run_reads=True)
@handled
def compact(
    brain: BrainOpt,
    older_than: Annotated[
        str, typer.Option(help="Compact daily notes older than this span (30d, 8w) or day.")
    ] = "30d",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the diff, write and record nothing.")
    ] = False,
    extractor: Annotated[
        str,
        typer.Option(
            help="A command that reads a note on stdin and prints its summary lines "
            "(default: the first sentence of each section)."
        ),
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """Turn old daily notes into short summaries and move their facts to bank pages.

    A daily note (memory/YYYY-MM-DD.md) whose day is older than --older-than by the
    brain's clock keeps its title, a summary per section and a pointer to its old text
    (ocb show PATH --as-of SEQ); its Retain facts and the lines someone said move
    verbatim to the bank page they belong to, keeping their chunk and fact ids (so
    learned edges and routes follow them). Recorded as maintenance.

    \b
    Example:
      ocb compact --older-than 30d --dry-run --brain /tmp/brain
      ocb compact --older-than 8w --brain /tmp/brain --json
      ocb compact --extractor "python summarize.py" --dry-run --brain /tmp/brain
    """
    from ocb.cli.render.compact import compact_text
    from ocb.wire.compact import compact_json

    with open_brain(brain, writer=not dry_run) as b:
        report = b.compact(older_than, dry_run=dry_run, extractor=extractor)
    out(report, as_json, compact_text, compact_json)


@group.command()
@runs("read")
@handled
def show(
    path: Annotated[str, typer.Argument(help="A file's path inside the workspace.")],
    brain: BrainOpt,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a workspace file as the brain recorded it (now, or --as-of a seq or time).

    The text is put together from the chunks the log holds; --json says whether it
    matches the file's recorded content hash byte for byte ("exact").

    \b
    Example:
      ocb show memory/2026-11-03.md --as-of 57 --brain /tmp/brain
      ocb show bank/world.md --brain /tmp/brain --json
    """
    from ocb.cli.render.compact import file_text
    from ocb.wire.compact import file_json

    with open_brain(brain, writer=False, as_of=as_of) as b:
        shown = b.show_file(path)
    out(shown, as_json, file_text, file_json)
