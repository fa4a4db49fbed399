"""Forgetting content for good (``ocb forget``): a record, every version of a file
(under every path it had: ``file_moved`` records are followed), a fact, or a piece of
text, erased from the whole history.

The log is append-only, so this is the one command that changes recorded bytes, and
only this way: each record holding the content gets a redacted payload, flagged as
redacted and keeping the digest of what it replaced, so seqs, framing, checksums and
the hash chain still verify (``ocb_events.log.SegmentLog.redact``). Every string field
that is not a machine field can be erased (``ocb.redaction.FIELDS``): a text field
reads ``[forgotten]``; a name (a path, a node id, a chat or request id) becomes the
placeholder ``[forgotten-N]`` (N: the seq of the ``content_forgotten`` record), the
same in every record, so the files, nodes and chats the history names still line up
and replay folds the same graph under the new names:

* ``--text T``: T is replaced wherever it occurs, in texts and names.
* ``--seq N``: the texts and keys (chat and request ids) of record N; the paths and
  node ids it names stay, as other records name them too (``--file`` or ``--text``
  erase those).
* ``--file P``: the texts of every version of the file, P itself wherever it occurs,
  and the ids of its chunks (``P::3`` becomes ``[forgotten-N]::3``): no record names P
  afterwards (a file that was moved: each of its paths gets its own placeholder,
  ``[forgotten-N-1]`` ...). The graph then holds the file as ``[forgotten-N]``, which
  the next sync removes as no such file is on disk; a file still at P with the same
  bytes is taken back as a move (its path is recorded again, its text stays forgotten
  until the file changes), and a path that holds a secret stays skipped.
* ``--fact F``: the fact in every version, and its text wherever else it was recorded.

Vectors embedded from the erased text are embedded again from the redacted text (their
``nodes_embedded`` records name the new blobs) and the old blobs are deleted; every
snapshot and cache, which may hold the content, is deleted and rebuilt from the log,
and the daemon's log (``run/*.log``) is scrubbed of the text and paths erased. A
``content_forgotten`` event then says what was erased, from which records and why,
never the content itself. The workspace's files are the user's and stay as they are:
a file that still holds the content is named in a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ocb.redaction import Edit, Role, redact_input, rewrite
from ocb.settings import actor_of
from ocb.store import Store
from ocb.upkeep.blobs import embed_again
from ocb_events.codec import encode_record
from ocb_events.errors import BrainError, InputError, LogError
from ocb_events.log import SegmentLog
from ocb_events.schema import (
    ContentForgotten,
    Event,
    FactSpec,
    FactsRecorded,
    FileChanged,
    FileIndexed,
    FileMoved,
    NodesEmbedded,
    NodeSplit,
    Record,
    ReflectChange,
    ReflectRan,
)
from ocb_events.texts import embedded_texts
from projections import graph as graph_projection
from workspace_sync import FileText, scan_workspace

MARKER = "[forgotten]"
MIN_TEXT = 4

Pass = tuple[Edit, Callable[[Any], bool]]
"""An edit of strings, and the structs it applies to."""
Select = Callable[[Record], Sequence[Pass]]


class ForgetReport(msgspec.Struct):
    """What ``forget`` erased (or, with ``dry_run``, would erase): the records
    rewritten (``seqs``: those holding it and, once it ran, the ``nodes_embedded``
    records naming the vectors embedded again; the seqs its ``content_forgotten``
    lists), the strings rewritten (``fields``) and the fields they were in
    (``field_names``, ``event.field`` paths such as ``query_traced.chat_id``)."""

    what: str
    seqs: list[int]
    fields: int
    blobs: int
    recorded: int
    dry_run: bool
    still_in_workspace: list[str] = msgspec.field(default_factory=list)
    field_names: list[str] = msgspec.field(default_factory=list)


# --------------------------------------------------------------------------- redaction


def placeholder(seq: int, i: int = 0) -> str:
    """The name that replaces an erased name: ``[forgotten-57]`` (``[forgotten-57-2]``
    for the second of several paths)."""
    return f"[forgotten-{seq}-{i}]" if i else f"[forgotten-{seq}]"


def _replace(pairs: Iterable[tuple[str, str]]) -> Callable[[str], str]:
    """Replace each (old, new), longest old first."""
    ordered = sorted(
        {(a, b) for a, b in pairs if len(a) >= MIN_TEXT}, key=lambda p: (-len(p[0]), p)
    )

    def edit(value: str) -> str:
        for a, b in ordered:
            if a in value:
                value = value.replace(a, b)
        return value

    return edit


def _text_edit(text: str, name: str) -> Edit:
    """``text`` erased wherever it occurs: ``[forgotten]`` in a text, ``name`` in a name."""

    def edit(value: str, role: Role, _: str) -> str:
        return value.replace(text, MARKER if role == "text" else name) if text in value else value

    return edit


def _record_edit(name: str) -> Edit:
    """A record's texts and keys erased; its paths and node ids, which other records
    share, kept."""

    def edit(value: str, role: Role, _: str) -> str:
        return MARKER if role == "text" else name if role == "key" else value

    return edit


def _file_edit(renames: dict[str, str], facts: tuple[str, ...], whole: bool) -> Edit:
    """The paths of a forgotten file renamed (a path, the path a node id starts with,
    the path in a text) and the texts of its facts erased; ``whole``: every text too."""
    in_text = _replace([*renames.items(), *((f, MARKER) for f in facts)])
    prefixes = sorted(((p + "::", n + "::") for p, n in renames.items()), key=lambda x: -len(x[0]))

    def edit(value: str, role: Role, _: str) -> str:
        if role == "text":
            return MARKER if whole else in_text(value)
        if role == "path":
            return renames.get(value, value)
        if role == "node":
            for old, new in prefixes:
                if value.startswith(old):
                    return new + value[len(old) :]
        return value

    return edit


def _all(_: Any) -> bool:
    return True


def _selector(
    *,
    seq: int | None,
    fact: str | None,
    text: str | None,
    name: str,
    facts: tuple[str, ...] = (),
    renames: dict[str, str] | None = None,
) -> Select:
    """For each record: the passes that edit it, each an edit of its strings and the
    structs it applies to (none: the record stays). ``facts`` are the contents of the
    facts forgotten with a fact or a file: their text is erased wherever else it was
    recorded (the chunk of the bullet they were parsed from, a page reflect copied them
    to, a query). A file is forgotten under every path it had (``renames``: each to its
    placeholder, see ``_file_paths``)."""
    if text is not None:
        by_text: list[Pass] = [(_text_edit(text, name), _all)]
        return lambda rec: by_text
    if seq is not None:
        of_record: list[Pass] = [(_record_edit(name), _all)]
        return lambda rec: of_record if rec.seq == seq else []
    if fact is not None:
        return _of_fact(fact, facts, name)
    assert renames is not None
    return _of_file(renames, facts)


def _of_fact(fact: str, facts: tuple[str, ...], name: str) -> Select:
    elsewhere = _replace((f, MARKER) for f in facts)

    def erase(value: str, role: Role, _: str) -> str:
        return elsewhere(value) if role == "text" else value

    whole: list[Pass] = [(_record_edit(name), lambda s: isinstance(s, FactSpec) and s.id == fact)]
    rest: list[Pass] = [(erase, _all)]

    def of_fact(rec: Record) -> list[Pass]:
        ev = rec.event
        held = isinstance(ev, FactsRecorded) and any(f.id == fact for f in ev.facts)
        return whole if held else rest

    return of_fact


def _of_file(renames: dict[str, str], facts: tuple[str, ...]) -> Select:
    prefixes = tuple(p + "::" for p in sorted(renames))  # a split chunk's id: path::n
    whole: list[Pass] = [(_file_edit(renames, facts, True), _all)]
    rest: list[Pass] = [(_file_edit(renames, facts, False), _all)]
    pages: list[Pass] = [
        (
            _file_edit(renames, facts, True),
            lambda s: isinstance(s, ReflectChange) and s.path in renames,
        ),
        *rest,
    ]

    def of_file(rec: Record) -> list[Pass]:
        ev = rec.event
        if isinstance(ev, (FileIndexed, FileChanged, FactsRecorded)) and ev.path in renames:
            return whole
        if isinstance(ev, NodeSplit) and ev.node_id.startswith(prefixes):
            return whole
        return pages if isinstance(ev, ReflectRan) else rest

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


def _texts_changed(old: Event, new: Event) -> set[str]:
    """Node ids (as the redacted record names them) whose embedded text changed."""
    pairs = zip(embedded_texts(old), embedded_texts(new), strict=True)
    return {b_id for (_, a), (b_id, b) in pairs if a != b}


# --------------------------------------------------------------------------- the command


def _check(
    store: Store, seq: int | None, path: str | None, fact: str | None, text: str | None
) -> str:
    """What is forgotten, as the report names it (a path with its secrets redacted).

    Raises:
        InputError: not exactly one thing named, an out-of-range seq, a too short text.
    """
    given = [x for x in (seq, path, fact, text) if x is not None]
    if len(given) != 1:
        raise InputError(
            "say what to forget: one of `seq`, `path`, `fact` or `text`",
            'e.g. `text="ghp_..."` `reason="a token pasted by mistake"`',
            param=("seq", "path", "fact", "text", "reason"),
        )
    if seq is not None:
        if not 1 <= seq <= store.log.last_seq:
            raise InputError(
                f"`seq` {seq} is outside the history (1..{store.log.last_seq})",
                "list records with ocb events",
                param="seq",
            )
        return f"record {seq}"
    if text is not None:
        if len(text) < MIN_TEXT:
            raise InputError(
                f"`text` must be at least {MIN_TEXT} characters, got {len(text)}",
                "give the exact text to erase, e.g. the whole token",
                param="text",
            )
        return f"a text of {len(text)} characters"
    if fact is not None:
        return f"fact {fact}"
    assert path is not None
    return f"file {store.secrets().redact_name(path).text}"


def _plan(store: Store, select: Select) -> tuple[dict[int, Record], list[str], set[str]]:
    """The records to rewrite (redacted), the fields changed (one entry per string) and
    the nodes whose embedded text changed."""
    out: dict[int, Record] = {}
    fields: list[str] = []
    touched: set[str] = set()
    for rec in store.log.read():
        event = rec.event
        for edit, structs in select(rec):
            event, changed = rewrite(event, edit, select=structs)
            fields += changed
        if event is not rec.event:
            out[rec.seq] = msgspec.structs.replace(rec, event=event)
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
    """The workspace files that still hold what was forgotten, in their text or their
    name (shown with its secrets redacted)."""
    root = store.workspace
    if not root or not Path(root).is_dir():
        return []
    names = store.secrets()
    if paths:
        on_disk = [p for p in sorted(paths) if (Path(root) / p).exists()]
        return [names.redact_name(p).text for p in on_disk]
    texts = [text] if text is not None else [c for cs in facts.values() for c in cs]
    if not texts:
        return []
    files, _ = scan_workspace(Path(root))
    return [
        names.redact_name(f.path).text
        for f in files
        if isinstance(f, FileText) and any(t and (t in f.text or t in f.path) for t in texts)
    ]


def _scrub_logs(store: Store, replace: Callable[[str], str]) -> None:
    """Erase the same texts from the daemon's logs (``run/*.log``, written in place: a
    daemon appends to them)."""
    for log in sorted((store.path / "run").glob("*.log")):
        try:
            with log.open("r+", encoding="utf-8", errors="surrogateescape") as f:
                old = f.read()
                new = replace(old)
                if new != old:
                    f.seek(0)
                    f.write(new)
                    f.truncate()
        except OSError as exc:
            store.warn(f"could not scrub {log.name}: {exc.strerror or exc}")


def _renames(paths: frozenset[str], seq: int) -> dict[str, str]:
    """Each path of a forgotten file to its placeholder."""
    ordered = sorted(paths)
    if len(ordered) == 1:
        return {ordered[0]: placeholder(seq)}
    return {p: placeholder(seq, i) for i, p in enumerate(ordered, 1)}


class _Erasure:
    """What a forget decided at a seq: the placeholder name, the file's paths and their
    placeholders, the facts' contents, the records rewritten (redacted), the strings
    changed, the nodes whose text changed, and the vector blobs embedded again."""

    def __init__(self, store: Store, decided_at: int, path: str | None, fact: str | None):
        self.name = placeholder(decided_at + 1)
        self.paths = _file_paths(store, path) if path is not None else frozenset()
        self.renames = _renames(self.paths, decided_at + 1) if self.paths else None
        self.facts = _facts_of(store, self.paths, fact)
        self.every = tuple(c for cs in self.facts.values() for c in cs)
        self.plan: dict[int, Record] = {}
        self.fields: list[str] = []
        self.touched: set[str] = set()
        self.renamed: dict[str, str] = {}


def _erasure(
    store: Store,
    what: str,
    decided_at: int,
    seq: int | None,
    path: str | None,
    fact: str | None,
    text: str | None,
) -> _Erasure:
    """The records to rewrite, decided at ``decided_at``.

    Raises:
        InputError: no record holds what is forgotten.
    """
    e = _Erasure(store, decided_at, path, fact)
    select = _selector(seq=seq, fact=fact, text=text, name=e.name, facts=e.every, renames=e.renames)
    e.plan, e.fields, e.touched = _plan(store, select)
    if not e.plan:
        raise InputError(f"no record holds {what}", "check it with ocb events or ocb sql")
    return e


def forget(
    store: Store,
    *,
    seq: int | None = None,
    path: str | None = None,
    fact: str | None = None,
    text: str | None = None,
    reason: str = "",
    dry_run: bool = False,
    actor: str = "cli",
) -> ForgetReport:
    """Erase content from the whole history of ``brain`` (see the module docstring),
    recorded as ``actor``.

    Raises:
        InputError: not exactly one of seq, path, fact or text; an out-of-range seq, a
            too short text, or content that no record holds; a brain opened as of a
            past point.
        LogWriteFailed: the disk refused the content_forgotten record (nothing erased).
        BrainError: the record saying what is forgotten was appended, but the
            content could not be erased (the same forget again finishes it).
    """
    if store.as_of is not None:
        raise InputError(
            "a view of the past changes nothing", "drop `as_of` to forget", param="as_of"
        )
    log = store.log
    if not isinstance(log, SegmentLog):
        raise InputError(
            "forget rewrites the segments of a log on disk; this brain's log is not one",
            "open the brain from its directory to forget content",
        )
    what = _check(store, seq, path, fact, text)
    store.load("config", "graph")
    got: list[_Erasure] = []
    said: list[str] = []  # the reason, redacted once

    def decide(decided_at: int) -> list[ContentForgotten]:
        got.append(_erasure(store, what, decided_at, seq, path, fact, text))
        e = got[-1]
        if dry_run:
            return []
        said[:] = said or [redact_input(store.warn, store.secrets(), "forget reason", reason)]
        e.renamed = _reembed(store, e.plan, e.touched)
        return [
            ContentForgotten(
                what=f"file {e.name}" if e.renames else what, seqs=tuple(sorted(e.plan)),
                fields=len(e.fields), blobs=len(e.renamed), reason=said[0],
            )
        ]  # fmt: skip

    # recorded first: a redacted record is trusted only when a content_forgotten names
    # it (ocb_events.links), so a failure in between leaves a record that names seqs
    # still whole (forget again erases them), never an erasure nothing vouches for
    recs = store.transact(actor_of(actor), decide)
    e = got[-1]
    report = ForgetReport(what, sorted(e.plan), len(e.fields), 0, 0, dry_run)
    report.field_names = sorted(set(e.fields))
    report.still_in_workspace = _still_on_disk(store, e.paths, text, e.facts)
    if dry_run:
        return report
    plan, renamed, renames, every = e.plan, e.renamed, e.renames, e.every
    report.blobs = len(renamed)
    report.seqs = sorted(plan)  # with the nodes_embedded records naming the new blobs
    report.recorded = recs[0].seq
    try:
        log.redact({s: encode_record(r) for s, r in plan.items()})
    except LogError as exc:
        raise BrainError(
            f"recorded content_forgotten (seq {report.recorded}) but could not erase {what} "
            f"from {len(plan)} record(s): {exc.message}",
            "free disk space, then run the same ocb forget again",
        ) from exc
    store.forget_derived(renamed)
    gone = [(text, MARKER)] if text is not None else [*(renames or {}).items()]
    _scrub_logs(store, _replace([*gone, *((f, MARKER) for f in every)]))
    return report
