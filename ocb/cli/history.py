"""The commands over the brain's whole history, read through its analytics store: sql,
report, and the ``audit`` sub-app (edge, node)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ocb.cli.options import BrainOpt, JsonOpt, handled, note, open_brain, out, runs

if TYPE_CHECKING:
    from ocb.brain import Brain

group = typer.Typer()

audit = typer.Typer(
    help="Why an edge or a node is the way it is: every change and its cause.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@contextmanager
def reading(brain: Path) -> Iterator[tuple[Brain, Callable[[int, int], None]]]:
    """The brain, read-only, and the progress of catching its analytics store up with
    its log (a bar on a TTY, closed when the command is done with the brain)."""
    from ocb.cli.progress import ProgressBar

    bar = ProgressBar()
    try:
        with open_brain(brain, writer=False) as b:
            yield b, lambda n, t: bar("analytics", n, t)
    finally:
        bar.close()


@group.command()
@runs("history")
@handled
def sql(
    brain: BrainOpt,
    statement: Annotated[str, typer.Argument(help="The SQL to run (DuckDB dialect).")],
    as_json: JsonOpt = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV with a header row.")] = False,
) -> None:
    """Run SQL over the brain's whole history (views: events, traces, steps, fired,
    seeds, outcomes, deltas, lifecycle, files, injections, maintenance, labels, config,
    nodes, edges, retractions; documented in the README). Read-only and confined: one
    SELECT (or SHOW, DESCRIBE, SUMMARIZE, EXPLAIN), no files, extensions or settings.
    Limited by sql.timeout_s, sql.memory_mb and sql.max_result_mb (ocb config).

    \b
    Example:
      ocb sql --brain /tmp/brain "SELECT source, count(*) n FROM outcomes GROUP BY ALL"
      ocb sql --brain /tmp/brain --json "SELECT * FROM deltas WHERE rule = 'pg' LIMIT 5"
    """
    from ocb.brain import Brain
    from ocb.cli.render.sql import result_csv, result_text
    from ocb.wire import result_json
    from ocb_events.errors import InputError

    if as_json and as_csv:
        raise InputError("--json and --csv exclude each other", "pass one of them")
    Brain.check_sql(statement)
    with reading(brain) as (b, progress):
        result = b.sql(statement, progress=progress, waiting=note)
    if as_csv:
        typer.echo(result_csv(result), nl=False)
    else:
        out(result, as_json, result_text, result_json)


@group.command()
@runs("history")
@handled
def report(
    brain: BrainOpt,
    top: Annotated[int, typer.Option(help="Rows of the 'most churn' table.")] = 10,
    plot: Annotated[
        Path | None,
        typer.Option(help="Also write PNG plots into this directory (needs the plot extra)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Canned analytics: queries per day, fired nodes and context over time, edges with
    most churn, tiers over time, outcomes by source, maintenance runs.

    \b
    Example:
      ocb report --brain /tmp/brain
      ocb report --brain /tmp/brain --plot /tmp/plots --json
    """
    from ocb.cli.render.plot import check_plotting, write_plots
    from ocb.cli.render.sql import report_text
    from ocb.wire import report_json
    from ocb_events.errors import InputError

    if top < 1:
        raise InputError(f"--top must be at least 1, got {top}", "pass --top 10")
    if plot is not None:
        check_plotting(plot)
    with reading(brain) as (b, progress):
        rep = b.report(top=top, progress=progress, waiting=note)
    written = write_plots(rep, plot) if plot is not None else []
    out(rep, as_json, report_text, report_json)
    for p in written:
        note(f"wrote {p}")


@audit.command("edge")
@runs("history")
@handled
def audit_edge(
    brain: BrainOpt,
    source: Annotated[str, typer.Argument(help="Source node id.")],
    target: Annotated[str, typer.Argument(help="Target node id (or <STOP>).")],
    as_json: JsonOpt = False,
) -> None:
    """Every change to an edge's weight, in order, with before -> after, the rule and
    the cause (outcome -> trace -> query, chat, path; maintenance run; injection ...).

    \b
    Example:
      ocb audit edge --brain /tmp/brain deploy.md::2 rollback.md::0
      ocb audit edge --brain /tmp/brain deploy.md::2 rollback.md::0 --json
    """
    from ocb.cli.render.audit import edge_text
    from ocb.wire import edge_json

    with reading(brain) as (b, progress):
        got = b.audit_edge(source, target, progress=progress, waiting=note)
    out(got, as_json, edge_text, edge_json)


@audit.command("node")
@runs("history")
@handled
def audit_node(
    brain: BrainOpt,
    node: Annotated[str, typer.Argument(help="Node id.")],
    limit: Annotated[int, typer.Option(help="Most recent accesses to list.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """A node's life (created from a file version, edited, moved, merged, split),
    injections, weight changes around it and access history.

    \b
    Example:
      ocb audit node --brain /tmp/brain runbooks/deploy.md::1
      ocb audit node --brain /tmp/brain fix::1 --limit 5 --json
    """
    from ocb.cli.render.audit import node_text
    from ocb.wire import node_json

    with reading(brain) as (b, progress):
        got = b.audit_node(node, limit=limit, progress=progress, waiting=note)
    out(got, as_json, node_text, node_json)


@group.command("export")
@runs("local")
@handled
def export(
    brain: BrainOpt,
    parquet: Annotated[
        Path,
        typer.Option(
            "--parquet",
            help="Write every view as Parquet into this directory, partitioned by day.",
        ),
    ],
    force: Annotated[
        bool,
        typer.Option(help="Write into a directory holding other files (its views replaced)."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Export the brain's whole history (every view of ocb sql) as Parquet:
    DIR/<view>/day=YYYY-MM-DD/*.parquet, each row with brain_id and brain, so that
    DuckDB, Spark or Trino query many brains' exports together with one glob. Runs
    again into the same directory (views replaced); refuses a directory holding
    anything else unless --force.

    \b
    Example:
      ocb export --brain /tmp/brain --parquet /tmp/history/brain
      ocb export --brain /tmp/brain --parquet /tmp/history/brain --json
    """
    from ocb.cli.render.export import export_json, export_text

    with reading(brain) as (b, progress):
        got = b.export_parquet(parquet, force=force, progress=progress, waiting=note)
    out(got, as_json, export_text, export_json)
