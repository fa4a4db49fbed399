"""The core commands: init, query, learn, inject, events, config, snapshot, forget and
the demo. Heavy modules are imported inside the commands so that a cold start stays fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ocb.cli.options import (
    AsOfOpt,
    BrainOpt,
    JsonOpt,
    handled,
    init_brain,
    open_brain,
    out,
    runs,
    warn,
)

if TYPE_CHECKING:
    from ocb.brain import Brain

group = typer.Typer()


@group.command()
@runs("write")
@handled
def init(
    brain: BrainOpt,
    workspace: Annotated[Path, typer.Option(help="Markdown workspace to index.")],
    embedder: Annotated[
        str | None,
        typer.Option(
            help="What makes a new brain's vectors: hash (the default, built in), minilm "
            "(the local model of the optional embed extra, beside the hashed vectors) or "
            "http:<url>?model=<name> (an OpenAI-compatible or Ollama endpoint). An "
            "existing brain keeps its own (switch with ocb reembed)."
        ),
    ] = None,
    log: Annotated[
        str | None,
        typer.Option(
            help="Keep the log in PostgreSQL, shared with brains on other machines "
            "(postgresql://USER@HOST/DB, the postgres extra): a log that exists is "
            "joined. The password is taken out of the URL into a 0600 file in the "
            "brain, or comes from PGPASSWORD or ~/.pgpass."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Index a workspace into a brain (re-run to sync changes).

    \b
    Example:
      ocb init --workspace examples/workspace --brain /tmp/brain
      ocb init --workspace notes --brain /tmp/b2 --embedder minilm
      ocb init --workspace notes --brain /tmp/b3 --log postgresql://me@db.example/brains
    """
    from ocb.cli.progress import ProgressBar
    from ocb.cli.render.graph import sync_text
    from ocb.wire import sync_json

    bar = ProgressBar()
    report = init_brain(brain, workspace, bar, embedder, log)
    bar.close()
    out(report, as_json, sync_text, sync_json)


@group.command()
@runs("write")
@handled
def query(
    brain: BrainOpt,
    text: Annotated[str, typer.Argument(help="The question.")] = "",
    top: Annotated[int, typer.Option(help="Number of results.")] = 5,
    chat_id: Annotated[str, typer.Option(help="Chat this query belongs to.")] = "",
    mode: Annotated[str | None, typer.Option(help="Route mode: edge, edge+sim or learned.")] = None,
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
    from ocb.cli.render.graph import answer_text
    from ocb.wire import answer_json
    from ocb_events.errors import InputError

    if batch is not None and text:
        raise InputError("give a question or --batch FILE, not both", "drop one of them")
    with open_brain(brain, as_of=as_of) as b:
        if batch is not None:
            _answer_batch(b, batch, top=top, chat_id=chat_id, mode=mode)
            return
        answer = b.query(text, top=top, chat_id=chat_id, mode=mode)
    out(answer, as_json, answer_text, answer_json)


def _answer_batch(b: Brain, batch: Path, *, top: int, chat_id: str, mode: str | None) -> None:
    """One JSON answer per line of ``batch``; a failed line fails the command at the end."""
    from ocb.cli.batch import run_batch
    from ocb.wire import dumps
    from ocb_events.errors import OcbError

    failed = 0
    for obj in run_batch(b, batch, top=top, chat_id=chat_id, mode=mode):
        failed += "error" in obj
        typer.echo(dumps(obj))
    if failed:
        raise OcbError(f"{failed} batch line(s) failed", "see the error field of those lines")


@group.command()
@runs("write")
@handled
def learn(
    brain: BrainOpt,
    outcome: Annotated[float, typer.Option(help="Reward in [-1, 1].")],
    trace: Annotated[str, typer.Option(help="Trace id from ocb query.")] = "",
    chat_id: Annotated[str, typer.Option(help="Use the last trace of this chat.")] = "",
    fired_ids: Annotated[str, typer.Option(help="Comma-separated node path to credit.")] = "",
    rule: Annotated[
        str | None, typer.Option(help="transfer (default), route, pg or heuristic.")
    ] = None,
    source: Annotated[str, typer.Option(help="human, self, harvester or teacher.")] = "human",
    request_id: Annotated[
        str, typer.Option(help="Idempotency key: a retry with the same key is recorded once.")
    ] = "",
    again: Annotated[
        bool, typer.Option("--again", help="Score a trace this source already scored.")
    ] = False,
    used: Annotated[
        list[str] | None,
        typer.Option(help="A fired node the answer used or cited (repeatable)."),
    ] = None,
    cited: Annotated[
        list[str] | None,
        typer.Option(help="A citation of the answer: path#L12-L20, path#L12 or path (repeat)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Score a trace so the next answer to its question fires what helped.

    Under the default rule (transfer, or route) the question's route keeps what a good
    answer used (--used, or the fired chunks its --cited citations name) or halves a
    good context, and vetoes a bad one; a related question follows it too (transfer);
    --rule pg or heuristic moves the edges walked instead. A good
    answer whose citations name nothing that fired is recorded as 0: it credits nothing.
    A trace is scored once per source; a retry with the same --request-id records
    nothing new and prints the outcome already recorded.

    \b
    Example:
      ocb learn --brain /tmp/brain --trace t31 --outcome 1 --used runbooks/rollback.md::0
      ocb learn --brain /tmp/brain --trace t31 --outcome 1 --cited runbooks/rollback.md#L5-L9
      ocb learn --brain /tmp/brain --trace t31 --outcome 1 --request-id run-7
      ocb learn --brain /tmp/brain --chat-id c1 --outcome -1 --rule heuristic
    """
    from ocb.cli.render.graph import learn_text
    from ocb.wire import learn_json

    ids = [i.strip() for i in fired_ids.split(",") if i.strip()]
    with open_brain(brain) as b:
        report = b.learn(
            outcome,
            trace_id=trace,
            chat_id=chat_id,
            fired_ids=ids,
            rule=rule,
            source=source,
            request_id=request_id,
            again=again,
            used=used or (),
            cited=cited or (),
        )
    out(report, as_json, learn_text, learn_json)


@group.command()
@runs("write")
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
    from ocb.cli.render.graph import inject_text
    from ocb.wire import inject_json

    with open_brain(brain) as b:
        report = b.inject(
            node_type,
            content,
            chat_id=chat_id,
            trace_id=trace,
            targets=target or [],
            all_fired=all_fired,
        )
    out(report, as_json, inject_text, inject_json)


@group.command()
@runs("read")
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
    from ocb_events.codec import record_to_json

    types = _event_types(event_type or [])
    with open_brain(brain, writer=False, as_of=as_of) as b:
        stdout = sys.stdout.buffer
        for rec in b.events(since=since, types=types, limit=limit):
            stdout.write(record_to_json(rec) + b"\n")
        stdout.flush()


def _event_types(types: list[str]) -> list[str]:
    """The given event types, each checked to exist.

    Raises:
        InputError: an unknown type (with close matches).
    """
    from ocb_events.errors import unknown
    from ocb_events.schema import EVENT_TYPES

    tags = sorted(str(t.__struct_config__.tag) for t in EVENT_TYPES)
    for t in types:
        if t not in tags:
            raise unknown("event type", t, tags, "known types: " + ", ".join(tags))
    return types


@group.command(context_settings={"ignore_unknown_options": True})  # values may be negative
@runs("write")
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
    from ocb.cli.render.settings import settings_text
    from ocb.settings import check_key
    from ocb.wire import settings_json

    if key is not None and value is not None:
        check_key(key, value)  # refuse before the brain is opened for writing
    with open_brain(brain, writer=value is not None) as b:
        if key is not None and value is not None:
            b.set_config(key, value)
        shown = settings_json(b.state("config").values, key)
    out(shown, as_json, settings_text, lambda d: d)


@group.command()
@runs("local")
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


@group.command()
@runs("write")
@handled
def snapshot(brain: BrainOpt, as_json: JsonOpt = False) -> None:
    """Write a snapshot of every projection now (snapshots are derived: delete freely).

    \b
    Example:
      ocb snapshot --brain /tmp/brain
    """
    from ocb.cli.render.store import snapshot_text
    from ocb.wire import snapshot_json

    with open_brain(brain) as b:
        written = b.write_snapshots()
    out(written, as_json, snapshot_text, snapshot_json)


@group.command()
@runs("exclusive")
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
    from ocb.cli.render.store import forget_text
    from ocb.wire import forget_json

    with open_brain(brain) as b:
        report = b.forget(seq=seq, path=file, fact=fact, text=text, reason=reason, dry_run=dry_run)
    for rel in report.still_in_workspace:
        warn(f"{rel} still holds it on disk: edit the file, or it is recorded again")
    out(report, as_json, forget_text, forget_json)
