"""Compacting old daily notes on a brain (``ocb compact``): the notes whose day ended
more than ``--older-than`` before the brain's clock become short summaries and their
facts move to the bank pages they belong to (``ocb.memory.compaction`` decides the
texts), then the brain records it through its workspace sync.

Order, so that a crash at any point leaves every file either old or new and the log
saying what is on disk once the brain syncs again: the workspace is synced first (the
log holds every note exactly as it is now: ``ocb show PATH --as-of SEQ`` prints it);
every write is checked before the first one (a path that leads out of the workspace
refuses the whole run); a ``maintenance_ran`` record (op ``compact``) names what is
about to change; the pages are written, then the notes (each atomically); the sync
records the new texts, as ``maintenance``, with cause ``compact``.

Identity follows the text. The sync carries each chunk of a compacted note to the new
chunk of a page holding most of its words (at least half: ``CARRY_MIN``), so that the
chunk keeps its id and with it its edges, weights and authority; each moved fact keeps
its id. A route's credit on a carried chunk is re-tied to the chunk's new text (a
``route_updated`` with no change of credit), so routes follow it too.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ocb.engine.dates import since_window, today
from ocb.graph.sync import sync
from ocb.memory.compaction import Compaction, Edit, Move, daily_day, is_compacted, plan_compaction
from ocb.settings import Indexing, actor_of
from ocb.store import Store
from ocb_events.errors import InputError, OcbError, WorkspaceError
from ocb_events.schema import (
    ChunkText,
    Event,
    FileChanged,
    FileIndexed,
    MaintenanceRan,
    RouteCredit,
    RouteUpdated,
    Setting,
)
from projections.graph import State
from workspace_sync import (
    FileText,
    PreviousFacts,
    scan_workspace,
    writable_target,
    write_workspace_file,
)
from workspace_sync.diff import tokens

__all__ = ["CARRY_MIN", "EXTRACTOR_TIMEOUT_S", "CompactReport", "compact", "extract"]

CARRY_MIN = 0.5
"""The share of an old chunk's words a new chunk must hold to carry its id."""


class CompactReport(msgspec.Struct):
    """What ``compact`` did (or, on a dry run, would do): the cutoff day (notes of
    earlier days are compacted), the seq whose state holds the old texts, the notes
    compacted, the files changed with their characters before and after, the moves,
    the unified diff of every file, the chunks that kept their ids, the route credits
    re-tied, the notes skipped (with why), and whether anything was written."""

    older_than: str
    cutoff: str
    as_of: int
    notes: list[str]
    files: list[str]
    chars_before: int
    chars_after: int
    moves: list[Move]
    diff: str
    carried: int = 0
    routes_retied: int = 0
    skipped: list[tuple[str, str]] = msgspec.field(default_factory=list)
    written: bool = False


def _cutoff(older_than: str, now_ns: int) -> str:
    """The first day not compacted: the day of ``now - older_than``.

    Raises:
        InputError: not a span like 30d or 2w, nor a date.
    """
    try:
        return today(since_window(older_than, now_ns).start_ns).isoformat()
    except InputError:
        raise InputError(
            f"cannot read `older_than` {older_than!r}",
            "give a span like 30d or 8w, or a date YYYY-MM-DD",
            param="older_than",
        ) from None


def _texts(store: Store, root: Path) -> tuple[dict[str, FileText], list[tuple[str, str]]]:
    """The workspace's Markdown files, and the daily notes that may not be written."""
    found, _ = scan_workspace(root, max_bytes=store.setting(Indexing).max_file_bytes)
    files = {f.path: f for f in found if f.markdown}
    skipped = []
    for path in sorted(files):
        if daily_day(path) is None or is_compacted(files[path].text):
            continue
        try:
            writable_target(root, path)
        except WorkspaceError as exc:
            skipped.append((path, exc.message))
    return files, skipped


def _pending(graph: State, files: dict[str, FileText]) -> frozenset[str]:
    """Notes compacted on disk whose compaction the log does not hold yet (a run killed
    after writing): the next run records them, keeping the identity of their chunks."""
    return frozenset(
        p
        for p, f in files.items()
        if daily_day(p) is not None and is_compacted(f.text)
        if p in graph.files and graph.files[p].content_hash != f.content_hash
    )


def _diff(edits: Sequence[Edit]) -> str:
    out: list[str] = []
    for e in edits:
        before = (e.before or "").splitlines(keepends=True)
        old = f"a/{e.path}" if e.before is not None else "/dev/null"
        out += difflib.unified_diff(before, e.after.splitlines(keepends=True), old, f"b/{e.path}")
    return "".join(out)


class _Carry:
    """The identity a compaction keeps (``ocb.graph.carry.Carry``)."""

    def __init__(self, plan: Compaction, pending: frozenset[str], pages: frozenset[str]) -> None:
        self.notes = frozenset(plan.notes) | pending
        self.pages = frozenset(e.path for e in plan.edits if e.path not in self.notes) | pages
        self.moved: dict[str, list[tuple[str, int, int]]] = {}
        for m in plan.moves:
            note, lines = m.source.split("#L")
            a, b = (int(x.lstrip("L")) for x in lines.split("-"))
            self.moved.setdefault(m.target.split("#")[0], []).append((note, a, b))
        self.carried: dict[str, tuple[str, str]] = {}  # id -> (old, new) text hash

    def facts(self, previous: dict[str, PreviousFacts]) -> dict[str, PreviousFacts]:
        out: dict[str, PreviousFacts] = dict(previous)
        for page, spans in sorted(self.moved.items()):
            have = out.get(page)
            extra = [
                f
                for note, a, b in spans
                for f in (previous[note].facts if note in previous else ())
                if a <= f.start_line and f.end_line <= b
            ]
            if extra:
                mine = have.facts if have else ()
                out[page] = PreviousFacts(have.content_hash if have else "", (*mine, *extra))
        return out

    def chunks(self, graph: State, events: list[Event]) -> list[Event]:
        gone = [
            i
            for ev in events
            if isinstance(ev, FileChanged) and ev.path in self.notes
            for i in ev.removed
            if i in graph.nodes and graph.nodes[i].text
        ]
        fresh: list[ChunkText] = []
        for ev in events:
            if isinstance(ev, FileChanged) and ev.path in self.pages:
                fresh += ev.added
            elif isinstance(ev, FileIndexed) and ev.path in self.pages:
                fresh += ev.chunks
        pairs = []
        new_tokens = [tokens(c.text) for c in fresh]
        for i in gone:
            words, where = tokens(graph.nodes[i].text), f"From {graph.nodes[i].path}"
            for k, toks in enumerate(new_tokens):
                if where not in fresh[k].heading:
                    continue
                share = len(words & toks) / len(words) if words else 0.0
                if share >= CARRY_MIN:
                    pairs.append((-share, i, k))
        rename: dict[str, str] = {}
        used: set[int] = set()
        for _, i, k in sorted(pairs):
            if i not in rename.values() and k not in used:
                rename[fresh[k].id] = i
                used.add(k)
        self.carried = {
            old: (graph.nodes[old].text_hash, c.text_hash)
            for c in fresh
            if (old := rename.get(c.id)) is not None
        }
        return [_renamed(ev, rename, frozenset(rename.values())) for ev in events]


def _renamed(ev: Event, rename: dict[str, str], kept: frozenset[str]) -> Event:
    def re(c: ChunkText) -> ChunkText:
        return msgspec.structs.replace(c, id=rename.get(c.id, c.id))

    if isinstance(ev, FileIndexed):
        return msgspec.structs.replace(ev, chunks=tuple(re(c) for c in ev.chunks))
    if not isinstance(ev, FileChanged):
        return ev
    moved_in = tuple(re(c) for c in ev.added if c.id in rename)
    return msgspec.structs.replace(
        ev,
        added=tuple(c for c in ev.added if c.id not in rename),
        revised=(*ev.revised, *moved_in),
        removed=tuple(i for i in ev.removed if i not in kept),
    )


def _retie(store: Store, carried: dict[str, tuple[str, str]], cause: int, actor: str) -> int:
    """Re-tie route credits on carried chunks to their new texts; how many."""
    routes = store.state("routes")
    events: list[Event] = []
    for rid in sorted(routes.routes):
        r = routes.routes[rid]
        credits = tuple(
            RouteCredit(node=n, delta=0.0, text_hash=new)
            for n, (old, new) in sorted(carried.items())
            if n in r.credits and r.hashes.get(n) == old and old != new
        )
        if credits:
            events.append(RouteUpdated(route_id=rid, cause_seq=cause, credits=credits))
    if events:
        store.transact(actor_of(actor), lambda _seq: events)
    return sum(len(e.credits) for e in events if isinstance(e, RouteUpdated))


EXTRACTOR_TIMEOUT_S = 120


def extract(command: str, path: str, text: str) -> list[str]:
    """The summary lines the ``extractor`` command prints for a note: it runs (no shell)
    with the note's text on stdin and ``OCB_NOTE_PATH`` naming it; each line it prints
    becomes a summary bullet (none: the extractive summary stays).

    Raises:
        InputError: the command cannot run, fails, or runs over EXTRACTOR_TIMEOUT_S.
    """
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise _failed(command, path, str(exc)) from None
    if not argv:
        raise _failed(command, path, "an empty command")
    env = {**os.environ, "OCB_NOTE_PATH": path}
    try:
        p = subprocess.run(
            argv, input=text, capture_output=True, text=True, env=env, timeout=EXTRACTOR_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise _failed(command, path, f"over {EXTRACTOR_TIMEOUT_S} s") from None
    except OSError as exc:
        raise _failed(command, path, exc.strerror or str(exc)) from None
    if p.returncode != 0:
        first = (p.stderr.strip().splitlines() or [""])[0]
        raise _failed(command, path, f"exit {p.returncode}" + (f": {first}" if first else ""))
    return p.stdout.splitlines()


def _failed(command: str, path: str, why: str) -> InputError:
    return InputError(
        f"the extractor {command!r} failed on {path} ({why}); nothing was written",
        "fix the command (it reads a note on stdin and prints summary lines), "
        "or leave out `extractor`",
        param="extractor",
    )


def _refuse_past(store: Store) -> None:
    if store.as_of is not None:
        raise InputError(
            f"this brain is opened as of seq {store.as_of}; compacting writes",
            "drop `as_of` to compact, or pass `dry_run`",
            param=("as_of", "dry_run"),
        )


def _report(
    older_than: str, cutoff: str, plan: Compaction, skipped: list[tuple[str, str]]
) -> CompactReport:
    return CompactReport(
        older_than=older_than,
        cutoff=cutoff,
        as_of=plan.as_of,
        notes=list(plan.notes),
        files=[e.path for e in plan.edits],
        chars_before=sum(len(e.before or "") for e in plan.edits),
        chars_after=sum(len(e.after) for e in plan.edits),
        moves=list(plan.moves),
        diff=_diff(plan.edits),
        skipped=skipped,
    )


def _recorded_as_read(store: Store, files: dict[str, FileText], notes: Sequence[str]) -> None:
    """Check that the log holds the notes as they were read.

    Raises:
        WorkspaceError: a note changed meanwhile (nothing was written).
    """
    for p in notes:
        entry = store.graph.files.get(p)
        if entry is None or entry.content_hash != files[p].content_hash:
            raise WorkspaceError(
                f"{p} changed while it was compacted; nothing was written",
                "let the writer finish, then run ocb compact again",
            )


def compact(
    store: Store,
    older_than: str = "30d",
    *,
    dry_run: bool = False,
    extractor: str = "",
    actor: str = "maintenance",
) -> CompactReport:
    """Compact the daily notes of the brain's workspace older than ``older_than`` (a
    span back from the brain's clock, ``30d``, ``8w``, or a day) as the module says;
    ``dry_run`` writes and records nothing and returns the diff. ``extractor``, a
    command, writes each note's summary instead (``extract``).

    Raises:
        InputError: an unreadable span, an extractor that failed, or a brain opened as
            of a past point (but for a dry run).
        WorkspaceError: no workspace, a note that changed meanwhile, or a file that may
            not be written (then nothing is).
    """
    if not dry_run:
        _refuse_past(store)
    store.load("config", "graph", "vectors", "memory", "routes")
    if not store.graph.workspace:
        raise WorkspaceError("this brain has no workspace", "create it with ocb init --workspace W")
    root = Path(store.graph.workspace)
    cutoff = _cutoff(older_than, store.now())
    files, skipped = _texts(store, root)
    texts = {p: f.text for p, f in files.items()}
    refused = frozenset(p for p, _ in skipped)

    summaries: dict[str, list[str]] | None = None

    def decide(seq: int) -> Compaction:
        day = dt.date.fromisoformat(cutoff)
        return plan_compaction(texts, day, as_of=seq, refused=refused, summaries=summaries)

    plan = decide(store.horizon)
    if extractor:
        summaries = {p: extract(extractor, p, texts[p]) for p in plan.notes}
        plan = decide(store.horizon)
    pending = frozenset() if dry_run else _pending(store.graph, files)
    if dry_run or not (plan.edits or pending):
        return _report(older_than, cutoff, plan, skipped)
    if plan.notes:  # the log holds every note exactly as it is now
        sync(store, root, paths=plan.notes, actor=actor)
        _recorded_as_read(store, files, plan.notes)
        plan = decide(store.log.last_seq)
    for e in plan.edits:
        writable_target(root, e.path)  # every refusal comes before anything is written
    params = (Setting(key="older_than", value=older_than), Setting(key="cutoff", value=cutoff))
    summary = f"{len(plan.notes)} notes, {len(plan.moves)} moves, {len(pending)} pending"
    ran = MaintenanceRan(op="compact", params=params, summary=summary)
    recs = store.transact(actor_of(actor), lambda _seq: [ran])
    for e in plan.edits:
        write_workspace_file(root, e.path, e.after)
    pages = frozenset(p for p in files if p.startswith("bank/")) if pending else frozenset()
    carry = _Carry(plan, pending, pages)
    try:
        sync(store, root, cause="compact", actor=actor, carry=carry)
    except OcbError as exc:
        raise WorkspaceError(
            f"the notes are compacted, but that was not recorded: {exc.message}",
            "free disk space, then run ocb compact again to record it",
        ) from exc
    report = _report(older_than, cutoff, plan, skipped)
    report.carried = len(carry.carried)
    report.routes_retied = _retie(store, carry.carried, recs[0].seq, actor)
    report.written = True
    return report
