"""CLI commands over the brain's history: sql, report, audit (registered on ``ocb.cli.app.app``),
and their renderers (the JSON shapes are documented in README.md)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ocb.cli.app import BrainOpt, JsonOpt, _out, _warn, app, handled

if TYPE_CHECKING:
    from replay.analytics import AnalyticsStore
    from replay.audit import Cause, EdgeAudit, NodeAudit
    from replay.report import HistoryReport
    from replay.store_meta import QueryResult

audit_app = typer.Typer(
    help="Why an edge or a node is the way it is: every change and its cause.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(audit_app, name="audit")

STORE = Path("cache") / "analytics.duckdb"
"""The analytics store inside a brain directory (derived from the log; delete freely)."""


def _note(msg: str) -> None:
    typer.echo(msg, err=True)


@contextmanager
def caught_up(brain: Path) -> Iterator[AnalyticsStore]:
    """The brain's analytics store, caught up with its log (a progress bar on a TTY).

    Other processes may read the store at the same time; one that has to catch it up
    waits for their queries (saying so on stderr), and they wait for its catch-up.
    """
    from ocb.brain import Brain
    from ocb.cli.progress import ProgressBar
    from replay.analytics import AnalyticsStore

    bar = ProgressBar()
    with Brain(brain, writer=False, warn=_warn) as b:
        store = AnalyticsStore(b.path / STORE, warn=_warn, waiting=_note)
        try:
            store.catch_up(b.log, progress=lambda n, t: bar("analytics", n, t))
            bar.close()
            yield store
        finally:
            store.close()


# --------------------------------------------------------------------------- sql


@app.command()
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

    \b
    Example:
      ocb sql --brain /tmp/brain "SELECT source, count(*) n FROM outcomes GROUP BY ALL"
      ocb sql --brain /tmp/brain --json "SELECT * FROM deltas WHERE rule = 'pg' LIMIT 5"
    """
    from ocb_events.errors import InputError
    from replay.analytics import check_query

    if as_json and as_csv:
        raise InputError("--json and --csv exclude each other", "pass one of them")
    check_query(statement)
    with caught_up(brain) as store:
        result = store.query(statement)
    if as_csv:
        typer.echo(result_csv(result), nl=False)
    else:
        _out(result, as_json, result_text, result_json)


def cell(v: Any) -> Any:
    """A value as JSON: times as ISO strings (a naive datetime is UTC and gets ``Z``),
    decimals as floats, NaN as null, anything else JSON has no type for as its text."""
    if isinstance(v, datetime):
        return v.isoformat() + ("Z" if v.tzinfo is None else "")
    if isinstance(v, date | time):
        return v.isoformat()
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list | tuple):
        return [cell(x) for x in v]
    if isinstance(v, dict):
        return {str(k): cell(x) for k, x in v.items()}
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v).hex()
    if v is None or isinstance(v, str | int | float):
        return v
    return str(v)  # INTERVAL, UUID ...


def result_json(r: QueryResult) -> list[dict[str, Any]]:
    return [dict(zip(r.columns, (cell(v) for v in row), strict=True)) for row in r.rows]


def _text_cell(v: Any) -> str:
    v = cell(v)
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(_text_cell(x) for x in v) + "]"
    return str(v)


def table_text(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """An aligned text table (numbers right-aligned)."""
    if not columns:
        return "(no result)"
    cells = [[_text_cell(v) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    numeric = [
        bool(rows)
        and all(isinstance(row[i], int | float | Decimal) or row[i] is None for row in rows)
        for i in range(len(columns))
    ]

    def line(vals: list[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(vals, widths, numeric, strict=True)
        ).rstrip()

    out = [line(columns), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def result_text(r: QueryResult) -> str:
    return table_text(r.columns, r.rows)


def result_csv(r: QueryResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if r.columns:
        w.writerow(r.columns)
    for row in r.rows:
        w.writerow(["" if v is None else _text_cell(v) for v in row])
    return buf.getvalue()


# --------------------------------------------------------------------------- report


@app.command()
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
    from ocb_events.errors import InputError
    from replay.report import report as run_report

    if top < 1:
        raise InputError(f"--top must be at least 1, got {top}", "pass --top 10")
    if plot is not None:
        _check_plotting(plot)
    with caught_up(brain) as store:
        rep = run_report(store, top=top)
    written = write_plots(rep, plot) if plot is not None else []
    _out(rep, as_json, report_text, report_json)
    for p in written:
        typer.echo(f"wrote {p}", err=True)


def _check_plotting(directory: Path) -> None:
    from ocb_events.errors import InputError

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InputError(
            "--plot needs matplotlib, which is not installed",
            "pip install 'openclawbrain[plot]', or leave out --plot",
        ) from None
    if directory.exists() and not directory.is_dir():
        raise InputError(f"--plot {directory} is not a directory", "pass a directory path")


def report_json(r: HistoryReport) -> dict[str, Any]:
    return {
        "seq": r.seq,
        "tables": {
            t.name: [dict(zip(t.columns, (cell(v) for v in row), strict=True)) for row in t.rows]
            for t in r.tables
        },
    }


def report_text(r: HistoryReport) -> str:
    parts = [f"history up to seq {r.seq}"]
    for t in r.tables:
        parts.append(f"\n{t.title}:")
        parts.append(table_text(t.columns, t.rows) if t.rows else "(none)")
    return "\n".join(parts)


def write_plots(r: HistoryReport, directory: Path) -> list[Path]:
    """PNG plots of the per-day tables (matplotlib, headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    tables = {t.name: t for t in r.tables}
    written = []
    for name, series in (
        ("queries_per_day", ("queries", "mean_fired", "mean_context_chars")),
        ("tiers_per_day", ("reflex", "habitual", "dormant", "inhibitory")),
    ):
        t = tables[name]
        if not t.rows:
            continue
        days = [row[0] for row in t.rows]
        fig, axes = plt.subplots(len(series), 1, figsize=(8, 2.2 * len(series)), sharex=True)
        for ax, col in zip(axes, series, strict=True):
            i = t.columns.index(col)
            ax.plot(days, [row[i] for row in t.rows], marker=".")
            ax.set_ylabel(col)
        axes[0].set_title(t.title)
        fig.autofmt_xdate()
        out = directory / f"{name}.png"
        fig.savefig(out, dpi=100)
        plt.close(fig)
        written.append(out)
    return written


# --------------------------------------------------------------------------- audit


@audit_app.command("edge")
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
    from replay.audit import audit_edge as run

    with caught_up(brain) as store:
        got = run(store, source, target)
    _out(got, as_json, edge_text, _to_builtins)


@audit_app.command("node")
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
    from replay.audit import audit_node as run

    with caught_up(brain) as store:
        got = run(store, node, limit=limit)
    _out(got, as_json, node_text, _to_builtins)


def _to_builtins(obj: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(obj)


def _w(v: float | None) -> str:
    return "none" if v is None else f"{v:+.4f}"


def cause_text(c: Cause) -> str:
    at = f"seq {c.seq}"
    if c.kind == "outcome":
        head = f"{at}: outcome {c.reward:+g} from {c.reward_source or c.actor}"
        if c.trace_id:
            head += f" on trace {c.trace_id} (seq {c.trace_seq})"
        if c.query:
            head += f' for "{c.query}"'
        if c.chat_id:
            head += f" in chat {c.chat_id}"
        lines = [head]
        if c.path:
            lines.append("      path: " + "; ".join(c.path))
        elif c.fired_ids:
            lines.append("      fired: " + " -> ".join(c.fired_ids))
        return "\n".join(lines)
    if c.kind == "maintenance":
        params = ", ".join(f"{k}={v}" for k, v in sorted(c.params.items()))
        return f"{at}: maintenance {c.op} ({params})" + (f": {c.summary}" if c.summary else "")
    if c.kind == "injection":
        return f"{at}: {c.node_type} {c.node_id} injected: {c.content[:80]!r}"
    if c.kind == "teacher":
        return f"{at}: teacher {c.teacher} labelled hop {c.hop} at {c.node_id} ({c.query!r})"
    if c.kind == "sync":
        return f"{at}: file {c.file} {c.file_action} (version {c.content_hash[:12]})"
    if c.kind == "retraction":
        return f"{at}: {_retraction_text(c)}"
    return f"{at}: {c.type or c.kind} by {c.actor}"


def _retraction_text(c: Cause) -> str:
    what = f"{c.target_kind} at seq {c.target_seq}"
    if c.reward is not None:
        what += f" ({c.reward:+g} from {c.reward_source} on trace {c.trace_id or '-'})"
    elif c.node_id:
        what += f" ({c.node_id})"
    return f"retraction of the {what}" + (f": {c.reason!r}" if c.reason else "")


def edge_text(a: EdgeAudit) -> str:
    now = f"weight {_w(a.weight)} ({a.tier or a.kind})" if a.exists else "no longer exists"
    lines = [f"{a.source} -> {a.target}: {now}; {len(a.changes)} change(s) up to seq {a.as_of_seq}"]
    for c in a.changes:
        lines.append(f"  seq {c.seq} {c.ts}  {_w(c.before)} -> {_w(c.after)}  {c.rule} ({c.event})")
        lines.append("    cause " + cause_text(c.cause))
    return "\n".join(lines)


def node_text(a: NodeAudit) -> str:
    where = f"{a.path}#L{a.start_line}-{a.end_line}" if a.path else "(injected)"
    state = f"{a.kind}, {a.authority}" if a.exists else "removed"
    lines = [f"{a.id}: {where} ({state})" + (f", alias of {a.alias_of}" if a.alias_of else "")]
    lines.append("life:")
    for e in a.life:
        extra = " ".join(
            x
            for x in (
                f"{e.path}#L{e.start_line}-{e.end_line}" if e.path else "",
                f"version {e.content_hash[:12]}" if e.content_hash else "",
                f"with {e.other}" if e.other else "",
                e.detail,
            )
            if x
        )
        lines.append(f"  seq {e.seq} {e.ts}  {e.action}  {extra}".rstrip())
    if a.injections:
        lines.append("injections:")
        lines += ["  " + cause_text(c) for c in a.injections]
    lines.append(f"weight changes: {a.changes_out} out, {a.changes_in} in")
    if a.accesses:
        lines.append(
            f"fired by {a.accesses} quer{'y' if a.accesses == 1 else 'ies'} "
            f"({a.first_access} .. {a.last_access}); most recent:"
        )
        lines += [
            f"  seq {x.seq} {x.ts}  rank {x.rank}  {x.query!r}"
            + (f" (chat {x.chat_id})" if x.chat_id else "")
            for x in a.recent
        ]
    else:
        lines.append("never fired")
    return "\n".join(lines)
