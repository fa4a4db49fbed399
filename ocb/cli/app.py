"""The ``ocb`` command line: thin commands over ``ocb.brain``.

Exit codes: 0 success; 1 a user error (``error:`` and ``hint:`` lines on stderr, no
traceback, nothing recorded); 2 a usage error. Heavy modules are imported inside the
commands so that ``ocb --help`` starts fast.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from ocb_events.errors import InputError, LogError, OcbError

app = typer.Typer(
    help="OpenClawBrain: a learning memory graph over a Markdown workspace.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])

BrainOpt = Annotated[
    Path, typer.Option("--brain", envvar="OCB_BRAIN", help="Brain directory (or $OCB_BRAIN).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print a stable JSON object on stdout.")]
AsOfOpt = Annotated[
    str | None,
    typer.Option(help="Read the brain as it was at a seq or ISO time (records nothing)."),
]


def _fail(exc: OcbError) -> None:
    typer.echo(f"error: {exc.message}", err=True)
    if exc.hint:
        typer.echo(f"hint: {exc.hint}", err=True)


def handled(fn: F) -> F:
    """Map every OcbError of a command to exit code 1 with an error and a hint line."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except OcbError as exc:
            _fail(exc)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def _warn(msg: str) -> None:
    typer.echo(f"warning: {msg}", err=True)


def _out(
    obj: Any, as_json: bool, text: Callable[[Any], str], to_json: Callable[[Any], Any]
) -> None:
    from ocb.cli.render.text import dumps

    typer.echo(dumps(to_json(obj)) if as_json else text(obj))


@app.command()
@handled
def init(
    brain: BrainOpt,
    workspace: Annotated[Path, typer.Option(help="Markdown workspace to index.")],
    as_json: JsonOpt = False,
) -> None:
    """Index a workspace into a brain (re-run to sync changes).

    \b
    Example:
      ocb init --workspace examples/workspace --brain /tmp/brain
    """
    from ocb.brain import Brain
    from ocb.cli.progress import ProgressBar
    from ocb.cli.render.text import sync_json, sync_text

    bar = ProgressBar()
    b, report = Brain.init(brain, workspace, progress=bar, warn=_warn)
    b.close()
    bar.close()
    _out(report, as_json, sync_text, sync_json)


@app.command()
@handled
def query(
    brain: BrainOpt,
    text: Annotated[str, typer.Argument(help="The question.")] = "",
    top: Annotated[int, typer.Option(help="Number of results.")] = 5,
    chat_id: Annotated[str, typer.Option(help="Chat this query belongs to.")] = "",
    mode: Annotated[str | None, typer.Option(help="Route mode: edge or edge+sim.")] = None,
    batch: Annotated[
        Path | None, typer.Option(help="File of queries, one per line (text or JSON).")
    ] = None,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question from the brain and record the trace.

    \b
    Example:
      ocb query "how do I roll back a bad deploy" --brain /tmp/brain --top 5 --json
      ocb query --batch questions.jsonl --brain /tmp/brain --top 10
      ocb query "how do I roll back" --brain /tmp/brain --as-of 2026-11-03T10:00
    """
    from ocb.brain import Brain
    from ocb.cli.batch import run_batch
    from ocb.cli.render.text import answer_json, answer_text, dumps

    if batch is not None and text:
        raise InputError("give a question or --batch FILE, not both", "drop one of them")
    with Brain(brain, warn=_warn, as_of=as_of) as b:
        if batch is not None:
            failed = 0
            for obj in run_batch(b, batch, top=top, chat_id=chat_id, mode=mode):
                failed += "error" in obj
                typer.echo(dumps(obj))
            if failed:
                raise OcbError(
                    f"{failed} batch line(s) failed", "see the error field of those lines"
                )
            return
        answer = b.query(text, top=top, chat_id=chat_id, mode=mode)
    _out(answer, as_json, answer_text, answer_json)


@app.command()
@handled
def learn(
    brain: BrainOpt,
    outcome: Annotated[float, typer.Option(help="Reward in [-1, 1].")],
    trace: Annotated[str, typer.Option(help="Trace id from ocb query.")] = "",
    chat_id: Annotated[str, typer.Option(help="Use the last trace of this chat.")] = "",
    fired_ids: Annotated[str, typer.Option(help="Comma-separated node path to credit.")] = "",
    rule: Annotated[str | None, typer.Option(help="pg (default) or heuristic.")] = None,
    source: Annotated[str, typer.Option(help="human, self, harvester or teacher.")] = "human",
    request_id: Annotated[
        str, typer.Option(help="Idempotency key: a retry with the same key is recorded once.")
    ] = "",
    again: Annotated[
        bool, typer.Option("--again", help="Score a trace this source already scored.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Score a trace so the edges it used are strengthened or weakened.

    A trace is scored once per source; a retry with the same --request-id records
    nothing new and prints the outcome already recorded.

    \b
    Example:
      ocb learn --brain /tmp/brain --trace t31 --outcome 1 --request-id run-7
      ocb learn --brain /tmp/brain --chat-id c1 --outcome -1 --rule heuristic
    """
    from ocb.brain import Brain
    from ocb.cli.render.text import learn_json, learn_text

    ids = [i.strip() for i in fired_ids.split(",") if i.strip()]
    with Brain(brain, warn=_warn) as b:
        report = b.learn(
            outcome,
            trace_id=trace,
            chat_id=chat_id,
            fired_ids=ids,
            rule=rule,
            source=source,
            request_id=request_id,
            again=again,
        )
    _out(report, as_json, learn_text, learn_json)


@app.command()
@handled
def inject(
    brain: BrainOpt,
    content: Annotated[str, typer.Option(help="Text of the node.")],
    node_type: Annotated[
        str, typer.Option("--type", help="CORRECTION, TEACHING or DIRECTIVE.")
    ] = "TEACHING",
    chat_id: Annotated[
        str, typer.Option(help="A correction corrects this chat's last trace.")
    ] = "",
    trace: Annotated[str, typer.Option(help="... or in this trace.")] = "",
    target: Annotated[
        list[str] | None, typer.Option(help="Node id to suppress (repeatable).")
    ] = None,
    all_fired: Annotated[
        bool, typer.Option("--all", help="Veto every chunk that fired, not only contradicted ones.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add a CORRECTION, TEACHING or DIRECTIVE node to the graph.

    A CORRECTION must name what it corrects. With --chat-id or --trace it vetoes the
    chunks of that query its content contradicts, and lists them and the fired chunks
    it left alone; --all vetoes every chunk that fired; --target names the chunks.

    \b
    Example:
      ocb inject --brain /tmp/brain --type CORRECTION \\
        --content "Never skip CI for hotfixes" --chat-id c1
    """
    from ocb.brain import Brain
    from ocb.cli.render.text import inject_json, inject_text

    with Brain(brain, warn=_warn) as b:
        report = b.inject(
            node_type,
            content,
            chat_id=chat_id,
            trace_id=trace,
            targets=target or [],
            all_fired=all_fired,
        )
    _out(report, as_json, inject_text, inject_json)


@app.command()
@handled
def doctor(
    brain: BrainOpt,
    repair: Annotated[
        bool, typer.Option("--repair", help="First regenerate lost vector blobs.")
    ] = False,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check the brain's health: log, projections, vectors, blobs, edges, tiers.

    \b
    Example:
      ocb doctor --brain /tmp/brain
      ocb doctor --brain /tmp/brain --repair
      ocb doctor --brain /tmp/brain --as-of 1200
    """
    from ocb.checks.brain import FAIL, repair_blobs, run_doctor
    from ocb.checks.brain import as_json as doctor_json
    from ocb.cli.render.text import doctor_text, repair_text

    if repair and as_of is not None:
        raise InputError("--repair mends the brain as it is now", "drop --as-of")
    fixed = None
    if repair:
        try:
            fixed = repair_blobs(brain)
        except LogError:
            pass  # a damaged log: the doctor's report says so and names its repair
    checks = run_doctor(brain, as_of=as_of)
    if as_json:
        _out(checks, True, doctor_text, lambda c: doctor_json(c, fixed))
    else:
        typer.echo(("" if fixed is None else repair_text(fixed) + "\n") + doctor_text(checks))
    if any(c.status == FAIL for c in checks):
        raise typer.Exit(1)


@app.command()
@handled
def events(
    brain: BrainOpt,
    since: Annotated[int, typer.Option(help="Only events after this seq.")] = 0,
    event_type: Annotated[
        list[str] | None, typer.Option("--type", help="Only this event type (repeatable).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many events.")] = None,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = True,
) -> None:
    """Print the brain's history as JSON lines, oldest first (up to --as-of).

    \b
    Example:
      ocb events --brain /tmp/brain --since 0 --type outcome_recorded --limit 20
    """
    from ocb.brain import Brain
    from ocb.cli.render.history import check_types
    from ocb_events.codec import record_to_json

    types = check_types(event_type or [])
    with Brain(brain, writer=False, warn=_warn, as_of=as_of) as b:
        out = sys.stdout.buffer
        for rec in b.events(since=since, types=types, limit=limit):
            out.write(record_to_json(rec) + b"\n")
        out.flush()


@app.command(context_settings={"ignore_unknown_options": True})  # values may be negative
@handled
def config(
    brain: BrainOpt,
    key: Annotated[
        str | None, typer.Argument(help="Setting to show or set, e.g. traversal.max_hops.")
    ] = None,
    value: Annotated[str | None, typer.Argument(help="New value (records a config event).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the settings in force, show one, or record one.

    A new value is checked (known key, type, bounds, choices) before anything is
    recorded; recorded settings are marked.

    \b
    Example:
      ocb config --brain /tmp/brain
      ocb config --brain /tmp/brain memory.hop_decay
      ocb config --brain /tmp/brain traversal.max_hops 4
    """
    from ocb.brain import Brain
    from ocb.cli.render.history import settings_json, settings_text
    from ocb.settings import check_key

    if key is not None and value is not None:
        check_key(key, value)  # refuse before the brain is opened for writing
    with Brain(brain, writer=value is not None, warn=_warn) as b:
        if key is not None and value is not None:
            b.set_config(key, value)
        shown = settings_json(b, key)
    _out(shown, as_json, settings_text, lambda d: d)


@app.command()
@handled
def demo(
    workspace: Annotated[Path, typer.Option(help="Workspace to run on.")] = Path(
        "examples/workspace"
    ),
    brain: Annotated[
        Path | None, typer.Option(help="Brain directory (default: a temp dir).")
    ] = None,
) -> None:
    """Run the whole loop on a workspace: init, query, learn, correct, doctor.

    \b
    Example:
      ocb demo --workspace examples/workspace
    """
    from ocb.cli.demo import run_demo

    run_demo(workspace, brain, typer.echo)


@app.command()
@handled
def maintain(
    brain: BrainOpt,
    ops: Annotated[
        str,
        typer.Option(
            help="Comma-separated ops (default all): merge,split,decay,connect,scale,prune."
        ),
    ] = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan only.")] = False,
    half_life_days: Annotated[float | None, typer.Option(help="Decay half-life in days.")] = None,
    prune_below: Annotated[
        float | None, typer.Option(help="Remove edges whose |weight| is below.")
    ] = None,
    budget: Annotated[
        float | None, typer.Option(help="Cap on a node's positive out-weights.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Maintain the graph (decay, prune, merge, split, connect, scale) as events.

    \b
    Example:
      ocb maintain --brain /tmp/brain --ops decay,prune --dry-run
      ocb maintain --brain /tmp/brain --half-life-days 14 --json
    """
    from ocb.brain import Brain
    from ocb.cli.render.text import maintenance_json, maintenance_text
    from ocb.upkeep.maintain import maintain as run

    with Brain(brain, writer=not dry_run, warn=_warn) as b:
        report = run(
            b,
            ops,
            dry_run=dry_run,
            half_life_days=half_life_days,
            prune_below=prune_below,
            budget=budget,
        )
    _out(report, as_json, maintenance_text, maintenance_json)


@app.command()
@handled
def anchor(
    brain: BrainOpt,
    authority: Annotated[str, typer.Option(help="constitutional, canonical or overlay.")],
    node: Annotated[list[str] | None, typer.Option(help="Node id (repeatable).")] = None,
    file: Annotated[str, typer.Option(help="Workspace file: all its chunks.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Set the authority of nodes or of a whole file (constitutional never decays).

    \b
    Example:
      ocb anchor --brain /tmp/brain --file runbooks/deploy.md --authority constitutional
      ocb anchor --brain /tmp/brain --node notes/team.md::0 --authority canonical
    """
    from ocb.brain import Brain
    from ocb.cli.render.text import anchor_json, anchor_text
    from ocb.upkeep.maintain import anchor as set_authority

    with Brain(brain, warn=_warn) as b:
        report = set_authority(b, authority, node_ids=node or [], path=file)
    _out(report, as_json, anchor_text, anchor_json)


@app.command()
@handled
def teach(
    brain: BrainOpt,
    labels: Annotated[Path, typer.Option(help="JSON lines of teacher labels.")],
    apply: Annotated[bool, typer.Option("--apply", help="Record (default: dry run).")] = False,
    relevance: Annotated[bool, typer.Option(help="Also store scores as relevance.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Turn teacher labels on recorded decisions into policy-gradient updates.

    \b
    Example:
      ocb teach --brain /tmp/brain --labels labels.jsonl            # prints the deltas
      ocb teach --brain /tmp/brain --labels labels.jsonl --apply --relevance
    """
    from ocb.brain import Brain
    from ocb.cli.render.text import teach_json, teach_text
    from ocb.graph.teach import read_labels, teach

    with Brain(brain, writer=apply, warn=_warn) as b:
        report = teach(b, read_labels(labels), apply=apply, relevance=relevance)
    _out(report, as_json, teach_text, teach_json)


@app.command("train-route")
@handled
def train_route(
    brain: BrainOpt,
    min_examples: Annotated[int, typer.Option(help="Fewest labelled decisions.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Train the route model from recorded outcomes and labels (for --mode learned).

    \b
    Example:
      ocb train-route --brain /tmp/brain
      ocb query "how do I roll back" --brain /tmp/brain --mode learned
    """
    from ocb.brain import Brain
    from ocb.cli.render.text import train_json, train_text
    from ocb.graph.route import train

    with Brain(brain, warn=_warn) as b:
        report = train(b, min_examples=min_examples)
    _out(report, as_json, train_text, train_json)


@app.command()
@handled
def health(
    brain: BrainOpt,
    window: Annotated[int, typer.Option(help="Recent traces to average over.")] = 100,
    apply: Annotated[bool, typer.Option("--apply", help="Record the proposals.")] = False,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Report tier shares and query costs; propose (and --apply) setting fixes.

    \b
    Example:
      ocb health --brain /tmp/brain
      ocb health --brain /tmp/brain --apply
      ocb health --brain /tmp/brain --as-of 2026-11-03T10:00
    """
    from ocb.brain import Brain
    from ocb.cli.render.text import health_json, health_text
    from ocb.upkeep.health import check

    with Brain(brain, writer=apply, warn=_warn, as_of=as_of) as b:
        report, recs = check(b, window=window, apply=apply)
    _out((report, recs), as_json, health_text, health_json)


@app.command()
@handled
def snapshot(brain: BrainOpt, as_json: JsonOpt = False) -> None:
    """Write a snapshot of every projection now (snapshots are derived: delete freely).

    \b
    Example:
      ocb snapshot --brain /tmp/brain
    """
    from ocb.brain import Brain
    from ocb.cli.render.history import snapshot_text
    from replay import PROJECTIONS

    with Brain(brain, warn=_warn) as b:
        b.load(*PROJECTIONS)
        written = b.save_snapshots(force=True, strict=True)
    _out(written, as_json, snapshot_text, lambda w: [{"projection": n, "seq": s} for n, s in w])


@app.command()
@handled
def replay(
    brain: BrainOpt,
    verify: Annotated[bool, typer.Option("--verify", help="Compare with a full rebuild.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild every projection from the log and compare it with the live state.

    \b
    Example:
      ocb replay --brain /tmp/brain --verify
    """
    from ocb.brain import Brain
    from ocb.cli.render.history import findings_json, findings_text
    from replay.verify import verify_live

    with Brain(brain, writer=False, warn=_warn) as b:
        found = verify_live(b.log, b.snapshots)
    _out(found, as_json, findings_text, findings_json)
    if not all(f.ok for f in found):
        raise typer.Exit(1)


@app.command("verify")
@handled
def verify_command(
    brain: BrainOpt,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="First keep every intact record and turn damaged or lost ones into "
            "tombstones that keep their seq (recorded as a log_repaired event).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check the log's framing, checksums, seqs and hash chain, and every snapshot
    against a rebuild; with --repair, repair a damaged log first.

    \b
    Example:
      ocb verify --brain /tmp/brain
      ocb verify --brain /tmp/brain --repair
    """
    from ocb.brain import Brain
    from ocb.cli.progress import ProgressBar
    from ocb.cli.render.history import findings_json, findings_text, repair_json, repair_text
    from replay.verify import verify_segments, verify_snapshots

    fixed = None
    if repair:
        from ocb.checks.repair import repair_brain

        fixed = repair_brain(brain, warn=_warn)
        if not as_json:
            typer.echo(repair_text(fixed))
    found = [verify_segments(brain / "log")]
    if found[0].ok:
        bar = ProgressBar()
        with Brain(brain, writer=False, warn=_warn) as b:
            found += verify_snapshots(b.log, b.snapshots, lambda n, t: bar("verify", n, t))
        bar.close()
    _out(found, as_json, findings_text, lambda f: findings_json(f) | repair_json(fixed))
    if not all(f.ok for f in found):
        raise typer.Exit(1)


@app.command()
@handled
def forget(
    brain: BrainOpt,
    seq: Annotated[int | None, typer.Option(help="Forget the content of this record.")] = None,
    file: Annotated[
        str | None, typer.Option(help="Forget every version of this workspace file.")
    ] = None,
    fact: Annotated[str | None, typer.Option(help="Forget this fact in every version.")] = None,
    text: Annotated[
        str | None, typer.Option(help="Forget this exact text wherever it was recorded.")
    ] = None,
    reason: Annotated[str, typer.Option(help="Why (recorded; never the content).")] = "",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Name the records only; change nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Erase content from the whole history for good: the records keep their seq and
    the hash chain still verifies, their text becomes [forgotten], vectors are embedded
    again, snapshots and caches are deleted (commands rebuild them from the log; the
    time-travel checkpoints go too), and a content_forgotten event says what
    was erased (never the content). The workspace's files are not touched.

    \b
    Example:
      ocb forget --brain /tmp/brain --text "staging password hunter2" --reason "pasted"
      ocb forget --brain /tmp/brain --file notes/old-secrets.md --dry-run
    """
    from ocb.brain import Brain
    from ocb.cli.render.text import forget_json, forget_text

    with Brain(brain, warn=_warn) as b:
        report = b.forget(seq=seq, path=file, fact=fact, text=text, reason=reason, dry_run=dry_run)
    for rel in report.still_in_workspace:
        _warn(f"{rel} still holds it on disk: edit the file, or it is recorded again")
    _out(report, as_json, forget_text, forget_json)


# commands defined in their own modules register on ``app`` when imported


# commands defined in their own modules register on ``app`` when imported
from ocb.cli import history, kg, memory, reflect, retract, whatif  # noqa: E402, F401


def main() -> None:
    """Entry point of the ``ocb`` script."""
    # Vectors are searched with one matrix-vector product per query: a thread pool only
    # adds contention (10-20x slower on a busy 2-core machine). Set before numpy loads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    app()


if __name__ == "__main__":
    main()
