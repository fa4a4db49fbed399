"""``ocb log``: where a brain's log lives (a sub-app): ``ocb log migrate`` copies it to
PostgreSQL and back."""

from __future__ import annotations

from typing import Annotated

import typer

from ocb.cli.options import BrainOpt, JsonOpt, handled, out, runs

group = typer.Typer(
    help="The brain's log: copy it to a shared PostgreSQL log and back.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@group.command("migrate")
@runs("local")
@handled
def migrate(
    brain: BrainOpt,
    to: Annotated[
        str | None,
        typer.Option(help="Copy the log into this empty PostgreSQL log (postgresql://...)."),
    ] = None,
    to_local: Annotated[
        bool, typer.Option("--to-local", help="Copy the shared log back into the brain.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Copy the brain's log to PostgreSQL or back, verified (both end with one chain).

    Stop the daemon serving the brain first. The local log is kept as log.local.

    \b
    Example:
      ocb log migrate --to postgresql://me@db.example/brains --brain /tmp/brain
      ocb log migrate --to-local --brain /tmp/brain --json
    """
    from ocb.brain import Brain
    from ocb.cli.render.logs import migration_json, migration_text

    report = Brain.migrate_log(brain, to=to, to_local=to_local)
    out(report, as_json, migration_text, migration_json)
