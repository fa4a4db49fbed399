"""Forgetting content for good (``ocb forget``): a record, every version of a file
(under every path it had: ``file_moved`` records are followed), a fact, or a piece of
text, erased from the whole history.

The log is append-only, so this is the one command that changes recorded bytes, and
only this way: each record holding the content gets a redacted payload (its content
fields, as ``CONTENT`` lists them, hold ``[forgotten]`` instead), flagged as redacted
and keeping the digest of what it replaced, so seqs, framing, checksums and the hash
chain still verify (``ocb_events.log.SegmentLog.redact``). Vectors embedded from the
erased text are embedded again from the redacted text (their ``nodes_embedded``
records name the new blobs) and the old blobs are deleted; every snapshot and cache,
which may hold the content, is deleted and rebuilt from the log. A
``content_forgotten`` event then says what was erased, from which records and why,
never the content itself. The workspace's files are the user's and stay as they are:
a file that still holds the content is named in a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from ocb.store import Store
from ocb.upkeep.blobs import embed_again
from ocb_events.codec import encode_record
from ocb_events.errors import BrainError, InputError, LogError
from ocb_events.log import SegmentLog
from ocb_events.schema import (
    ChunkText,
    ConfigChanged,
    ContentForgotten,
    FactSpec,
    FactsRecorded,
    FileChanged,
    FileIndexed,
    FileMoved,
    KgFactSet,
    LogRepaired,
    MaintenanceRan,
    NodeInjected,
    NodesEmbedded,
    NodeSplit,
    QueryTraced,
    RecallHit,
    RecallTraced,
    Record,
    RecordLost,
    ReflectChange,
    ReflectRan,
    Retracted,
    RouteUpdated,
    Setting,
)
from projections import graph as graph_projection
from workspace_sync import FileText, scan_workspace

MARKER = "[forgotten]"
MIN_TEXT = 4

CONTENT: dict[type[msgspec.Struct], tuple[str, ...]] = {
    ChunkText: ("text", "heading"),
    FactSpec: ("content", "entities"),
    RecallHit: ("via",),
    ConfigChanged: ("value",),
    Setting: ("value",),
    KgFactSet: ("subject", "predicate", "value", "source"),
    MaintenanceRan: ("summary",),
    NodeInjected: ("content", "anchor_query"),
    QueryTraced: ("query",),
    RouteUpdated: ("query", "key"),
    RecallTraced: ("query",),
    ReflectChange: ("subject", "before", "after"),
    Retracted: ("reason",),
    RecordLost: ("reason",),
    LogRepaired: ("reason",),
    ContentForgotten: ("reason",),
}
"""The free-text fields of every struct that has any (a string or a tuple of strings):
what a user or an agent wrote, names of entities and subjects included, as opposed to
ids, paths, hashes and kinds (tests hold every event type to it)."""

Edit = Callable[[str], str]


class ForgetReport(msgspec.Struct):
    """What ``forget`` erased (or, with ``dry_run``, would erase)."""

    what: str
    seqs: list[int]
    fields: int
    blobs: int
    recorded: int
    dry_run: bool
    still_in_workspace: list[str] = msgspec.field(default_factory=list)


# --------------------------------------------------------------------------- redaction


def _redact(obj: Any, edit: Edit, select: Callable[[Any], bool]) -> tuple[Any, int]:
    """``obj`` with ``edit`` applied to the content fields of the structs ``select``
    accepts (recursively); and how many fields changed."""
    if isinstance(obj, tuple):
        parts = [_redact(x, edit, select) for x in obj]
        n = sum(k for _, k in parts)
        return (tuple(x for x, _ in parts), n) if n else (obj, 0)
    if not isinstance(obj, msgspec.Struct):
        return obj, 0
    changes: dict[str, Any] = {}
    n = 0
    fields = CONTENT.get(type(obj), ()) if select(obj) else ()
    for name in obj.__struct_fields__:
        value = getattr(obj, name)
        if name in fields and isinstance(value, str):
            new = edit(value)
            if new != value:
                changes[name], n = new, n + 1
        elif name in fields and isinstance(value, tuple):
            items = tuple(edit(v) if isinstance(v, str) else v for v in value)
            if items != value:
                changes[name], n = items, n + sum(a != b for a, b in zip(items, value, strict=True))
        elif isinstance(value, (tuple, msgspec.Struct)):
            new_value, k = _redact(value, edit, select)
            if k:
                changes[name], n = new_value, n + k
    return (msgspec.structs.replace(obj, **changes), n) if changes else (obj, 0)


def _whole(_: str) -> str:
    return MARKER


def _erase(texts: Iterable[str]) -> Edit:
    """An edit replacing each of ``texts`` (longest first) with the marker."""
    ordered = sorted({t for t in texts if len(t) >= MIN_TEXT}, key=lambda t: (-len(t), t))

    def edit(value: str) -> str:
        for t in ordered:
            value = value.replace(t, MARKER)
        return value

    return edit


def _selector(
    *,
    seq: int | None,
    path: str | None,
    fact: str | None,
    text: str | None,
    facts: tuple[str, ...] = (),
    paths: frozenset[str] = frozenset(),
) -> Callable[[Record], tuple[Edit, Callable[[Any], bool]] | None]:
    """For each record: how to edit its content fields and which structs to edit.
    ``facts`` are the contents of the facts forgotten with a fact or a file: their
    text is erased wherever else it was recorded (the chunk of the bullet they were
    parsed from, a page reflect copied them to, a query). A file is forgotten under
    ``path`` and the other ``paths`` it had (see ``_file_paths``)."""
    if text is not None:
        return lambda rec: (_erase([text]), lambda _: True)
    if seq is not None:
        return lambda rec: (_whole, lambda _: True) if rec.seq == seq else None
    elsewhere = _erase(facts)
    if fact is not None:

        def of_fact(rec: Record) -> tuple[Edit, Callable[[Any], bool]] | None:
            if isinstance(rec.event, FactsRecorded) and any(f.id == fact for f in rec.event.facts):
                return _whole, lambda s: isinstance(s, FactSpec) and s.id == fact
            return elsewhere, lambda _: True

        return of_fact
    assert path is not None
    paths = paths | {path}
    prefixes = tuple(p + "::" for p in sorted(paths))  # a split chunk's id: path::n

    def of_file(rec: Record) -> tuple[Edit, Callable[[Any], bool]] | None:
        ev = rec.event
        if isinstance(ev, (FileIndexed, FileChanged, FactsRecorded)) and ev.path in paths:
            return _whole, lambda _: True
        if isinstance(ev, NodeSplit) and ev.node_id.startswith(prefixes):
            return _whole, lambda _: True
        if isinstance(ev, ReflectRan):
            return _whole, lambda s: isinstance(s, ReflectChange) and s.path in paths
        return elsewhere, lambda _: True

    return of_file


def _file_paths(store: Store, path: str) -> frozenset[str]:
    """``path`` and every path the files that were there had before or after a move
    (``file_moved`` records followed both ways)."""
    links: dict[str, set[str]] = {}
    for rec in store.log.read(light=True):
        ev = rec.event
        if isinstance(ev, FileMoved):
            links.setdefault(ev.old_path, set()).add(ev.path)
            links.setdefault(ev.path, set()).add(ev.old_path)
    found, todo = {path}, [path]
    while todo:
        for other in sorted(links.get(todo.pop(), ())):
            if other not in found:
                found.add(other)
                todo.append(other)
    return frozenset(found)


def _facts_of(store: Store, paths: frozenset[str], fact: str | None) -> dict[str, tuple[str, ...]]:
    """The contents every version of the forgotten facts had, by the file holding them."""
    out: dict[str, set[str]] = {}
    if not paths and fact is None:
        return {}
    for rec in store.log.read():
        ev = rec.event
        if not isinstance(ev, FactsRecorded):
            continue
        for f in ev.facts:
            if (fact is not None and f.id == fact) or ev.path in paths:
                out.setdefault(ev.path, set()).add(f.content)
    return {p: tuple(sorted(c)) for p, c in sorted(out.items())}


def _texts_changed(old: Any, new: Any) -> set[str]:
    """Node ids whose embedded text a redaction changed."""
    if isinstance(old, (FileIndexed, FileChanged, NodeSplit)):
        before = {c.id: (c.text, c.heading) for c in _chunks(old)}
        return {c.id for c in _chunks(new) if before.get(c.id) != (c.text, c.heading)}
    if isinstance(old, NodeInjected) and old != new:
        return {old.node_id}
    return set()


def _chunks(ev: FileIndexed | FileChanged | NodeSplit) -> tuple[ChunkText, ...]:
    if isinstance(ev, FileIndexed):
        return ev.chunks
    if isinstance(ev, FileChanged):
        return (*ev.added, *ev.revised)
    return ev.parts


# --------------------------------------------------------------------------- the command


def _check(
    store: Store, seq: int | None, path: str | None, fact: str | None, text: str | None
) -> str:
    given = [x for x in (seq, path, fact, text) if x is not None]
    if len(given) != 1:
        raise InputError(
            "say what to forget: one of --seq, --file, --fact or --text",
            'e.g. ocb forget --text "ghp_..." --reason "a token pasted by mistake"',
        )
    if seq is not None:
        if not 1 <= seq <= store.log.last_seq:
            raise InputError(
                f"--seq {seq} is outside the history (1..{store.log.last_seq})",
                "list records with ocb events",
            )
        return f"record {seq}"
    if text is not None:
        if len(text) < MIN_TEXT:
            raise InputError(
                f"--text must be at least {MIN_TEXT} characters, got {len(text)}",
                "give the exact text to erase, e.g. the whole token",
            )
        return f"a text of {len(text)} characters"
    if fact is not None:
        return f"fact {fact}"
    return f"file {path}"


def _plan(
    store: Store, select: Callable[[Record], tuple[Edit, Callable[[Any], bool]] | None]
) -> tuple[dict[int, Record], int, set[str]]:
    """The records to rewrite (redacted), the fields changed and the nodes whose
    embedded text changed."""
    out: dict[int, Record] = {}
    fields, touched = 0, set()
    for rec in store.log.read():
        how = select(rec)
        if how is None:
            continue
        event, n = _redact(rec.event, *how)
        if n:
            out[rec.seq] = msgspec.structs.replace(rec, event=event)
            fields += n
            touched |= _texts_changed(rec.event, event)
    return out, fields, touched


def _reembed(store: Store, plan: dict[int, Record], touched: set[str]) -> dict[str, str]:
    """Embed again every vector blob that holds a touched node, from the redacted
    history: rewrites its ``nodes_embedded`` record in ``plan``; returns old -> new
    blob names."""
    renamed: dict[str, str] = {}
    if not touched:
        return renamed
    emb = store.embedder()
    g = graph_projection.initial()
    for rec in _redacted_log(store, plan):
        ev = rec.event
        if isinstance(ev, NodesEmbedded) and touched & set(ev.node_ids):
            data = embed_again(ev, g, emb)
            if isinstance(data, bytes):
                digest = store.blobs.put(data)
                if digest != ev.blob:
                    renamed[ev.blob] = digest
                    new = msgspec.structs.replace(ev, blob=digest)
                    rec = msgspec.structs.replace(rec, event=new)
                    plan[rec.seq] = rec
        g = graph_projection.evolve(g, rec)
    return renamed


def _redacted_log(store: Store, plan: dict[int, Record]) -> Iterator[Record]:
    for rec in store.log.read():
        yield plan.get(rec.seq, rec)


def _still_on_disk(
    store: Store, paths: frozenset[str], text: str | None, facts: dict[str, tuple[str, ...]]
) -> list[str]:
    root = store.graph.workspace
    if not root or not Path(root).is_dir():
        return []
    if paths:
        return [p for p in sorted(paths) if (Path(root) / p).exists()]
    texts = [text] if text is not None else [c for cs in facts.values() for c in cs]
    if not texts:
        return []
    files, _ = scan_workspace(Path(root))
    return [
        f.path for f in files if isinstance(f, FileText) and any(t and t in f.text for t in texts)
    ]


def forget(
    store: Store,
    *,
    seq: int | None = None,
    path: str | None = None,
    fact: str | None = None,
    text: str | None = None,
    reason: str = "",
    dry_run: bool = False,
) -> ForgetReport:
    """Erase content from the whole history of ``brain`` (see the module docstring).

    Raises:
        InputError: not exactly one of seq, path, fact or text; an out-of-range seq, a
            too short text, or content that no record holds; a brain opened as of a
            past point.
        LogWriteFailed: the disk refused the rewrite (each segment is whole, as it was
            or erased).
        BrainError: the content was erased but the record saying so could not be
            appended.
    """
    if store.as_of is not None:
        raise InputError("a view of the past changes nothing", "drop --as-of to forget")
    log = store.log
    if not isinstance(log, SegmentLog):
        raise InputError(
            "forget rewrites the segments of a log on disk; this brain's log is not one",
            "open the brain from its directory to forget content",
        )
    what = _check(store, seq, path, fact, text)
    store.load("config", "graph")
    decided_at = store.log.last_seq
    paths = _file_paths(store, path) if path is not None else frozenset()
    facts = _facts_of(store, paths, fact)
    every = tuple(c for cs in facts.values() for c in cs)
    select = _selector(seq=seq, path=path, fact=fact, text=text, facts=every, paths=paths)
    plan, fields, touched = _plan(store, select)
    if not plan:
        raise InputError(f"no record holds {what}", "check it with ocb events or ocb sql")
    report = ForgetReport(what, sorted(plan), fields, 0, 0, dry_run)
    report.still_in_workspace = _still_on_disk(store, paths, text, facts)
    if dry_run:
        return report
    renamed = _reembed(store, plan, touched)
    log.redact({s: encode_record(r) for s, r in plan.items()})
    store.forget_derived(renamed)
    event = ContentForgotten(
        what=what, seqs=tuple(sorted(plan)), fields=fields, blobs=len(renamed), reason=reason
    )
    report.blobs = len(renamed)
    try:
        report.recorded = store.record([event], "cli", expected_seq=decided_at)[0].seq
    except LogError as exc:
        raise BrainError(
            f"erased {what} from {len(plan)} record(s), but could not record "
            f"content_forgotten: {exc.message}",
            "the erased records stay erased and flagged as redacted in the log; free disk "
            "space before the next command",
        ) from exc
    return report
