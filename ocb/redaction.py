"""Keeping secrets out of what a brain records: the scanner of the settings in force
(``secrets.*``), the warnings that say where a secret was redacted (its place and kind,
never the secret), the role of every string field of the event schema (``FIELDS``),
and the net that ``Store.record`` passes every event through (``screened``).

NOTE: every string field of every event and part is in ``FIELDS`` (a test walks the
schema), so a new field is classified before it can be recorded. Its role says how it
is scanned and how ``ocb forget`` erases it:

* ``text``: what a user, an agent or a file wrote (a chunk, a query, a reason): the
  whole scanner, plain markers.
* ``path``, ``node``, ``key``: names (a workspace path; a node id, which embeds the path
  of its file as ``path::n``; a caller's chat or request id): the formats and extra
  patterns only, keyed markers (``Scanner.redact_name``), so names stay apart.
* ``machine``: what the brain generates (hashes, digests, blob names, trace and fact
  ids, kinds, rules, enums): never scanned (the entropy rule would take a digest for a
  secret) and never erased.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any, Literal, TypeVar

import msgspec
import msgspec.inspect as mi

from ocb.settings import Secrets, resolve
from ocb_events.schema import (
    AuthoritySet,
    Candidate,
    ChunkSpan,
    ChunkText,
    ConfigChanged,
    ContentForgotten,
    EdgeDelta,
    EdgeDeltas,
    EdgeRef,
    EdgesCreated,
    EdgeSpec,
    EdgesUpdated,
    EdgeValues,
    EmbedderConfigured,
    Event,
    FactSpec,
    FactsRecorded,
    FileChanged,
    FileIndexed,
    FileMoved,
    FileRemoved,
    FoldRecord,
    KgFactSet,
    LogRepaired,
    MaintenanceRan,
    NodeInjected,
    NodesEmbedded,
    NodesMerged,
    NodeSplit,
    NodeValue,
    OutcomeRecorded,
    QueryParams,
    QueryTraced,
    QueryTracedHead,
    RecallHit,
    RecallTraced,
    Record,
    RecordLost,
    ReflectChange,
    ReflectRan,
    Retracted,
    RouteCredit,
    RouteModelTrained,
    RouteUpdated,
    SeedHit,
    Setting,
    Step,
    TeacherLabeled,
    TurnWarmed,
    WorkspaceAttached,
    tag_of,
)
from workspace_sync.secrets import Finding, Redacted, Scanner

Warn = Callable[[str], None]
Role = Literal["text", "path", "node", "key", "machine"]
T = TypeVar("T")

_T: Role = "text"
_P: Role = "path"
_N: Role = "node"
_K: Role = "key"
_M: Role = "machine"
FIELDS: dict[type[msgspec.Struct], dict[str, Role]] = {
    WorkspaceAttached: {"root": _P},
    FileIndexed: {"path": _P, "content_hash": _M},
    FileChanged: {"path": _P, "content_hash": _M, "removed": _N},
    FileRemoved: {"path": _P, "removed": _N},
    FileMoved: {"old_path": _P, "path": _P, "content_hash": _M},
    EmbedderConfigured: {"embedder_id": _M, "spec": _T},
    NodesEmbedded: {"embedder_id": _M, "blob": _M, "node_ids": _N},
    EdgesCreated: {"cause": _M},
    EdgesUpdated: {"rule": _M},
    NodeInjected: {
        "node_id": _N, "node_type": _M, "content": _T, "anchor_query": _T, "chat_id": _K,
        "trace_id": _M, "authority": _M,
    },
    AuthoritySet: {"authority": _M, "node_ids": _N, "path": _P},
    MaintenanceRan: {"op": _M, "summary": _T},
    TeacherLabeled: {"trace_id": _M, "node": _N, "targets": _N, "teacher": _T},
    RouteModelTrained: {"blob": _M, "features": _M},
    RouteUpdated: {"route_id": _M, "key": _T, "query": _T},
    NodesMerged: {"kept": _N, "absorbed": _N},
    NodeSplit: {"node_id": _N},
    ConfigChanged: {"key": _M, "value": _T},
    QueryTraced: {
        "trace_id": _M, "query": _T, "fired": _N, "stop_reason": _M, "chat_id": _K,
        "vetoed": _N, "route": _M, "route_mode": _M,
    },
    QueryTracedHead: {"trace_id": _M, "chat_id": _K},
    OutcomeRecorded: {
        "source": _M, "trace_id": _M, "chat_id": _K, "fired_ids": _N, "request_id": _K,
        "used": _N, "rule": _M, "cited": _T, "confirmed": _M,
    },
    FactsRecorded: {"path": _P, "content_hash": _M, "cause": _M},
    RecallTraced: {"trace_id": _M, "query": _T},
    ReflectRan: {"priority": _M},
    KgFactSet: {"subject": _T, "predicate": _T, "value": _T, "source": _T},
    RecordLost: {"reason": _T, "segment": _M},
    LogRepaired: {"reason": _T},
    ContentForgotten: {"what": _T, "reason": _T},
    Retracted: {"kind": _M, "node_id": _N, "reason": _T},
    TurnWarmed: {"path": _P, "chain": _M, "trace_id": _M, "session_id": _K},
    Record: {"actor": _M},
    FoldRecord: {"actor": _M},
    # the parts nested in events
    ChunkText: {"id": _N, "text": _T, "text_hash": _M, "heading": _T},
    ChunkSpan: {"id": _N, "text_hash": _M},
    EdgeSpec: {"source": _N, "target": _N, "kind": _M},
    EdgeDelta: {"source": _N, "target": _N},
    EdgeDeltas: {"source": _N, "targets": _N},
    EdgeValues: {"source": _N, "targets": _N},
    NodeValue: {"node": _N},
    RouteCredit: {"node": _N, "text_hash": _M},
    EdgeRef: {"source": _N, "target": _N},
    Setting: {"key": _M, "value": _T},
    SeedHit: {"node_id": _N},
    Candidate: {"target": _N, "tier": _M},
    Step: {"node": _N, "chosen": _N, "followed": _N},
    QueryParams: {"mode": _M, "embedder_id": _M},
    FactSpec: {
        "id": _M, "kind": _M, "content": _T, "entities": _T, "text_hash": _M, "day": _M,
        "evidence": _T, "speaker": _M, "session": _K,
    },
    RecallHit: {"fact_id": _M, "via": _T},
    ReflectChange: {
        "path": _P, "subject": _T, "change": _M, "before": _T, "after": _T,
        "supporting": _M, "contradicting": _M,
    },
}  # fmt: skip
"""The role of every string field (a ``str``, a string ``Literal``, a union holding
one, or a tuple of them) of every event and part, by struct and field name."""

NAMES: frozenset[Role] = frozenset({"path", "node", "key"})
"""The roles scanned as names (``Scanner.redact_name``)."""


def scanner_of(config: Mapping[str, object]) -> Scanner:
    """The scanner of the recorded settings (defaults where none was recorded)."""
    s = resolve(Secrets, config)
    return Scanner(
        enabled=s.enabled,
        entropy_min=s.entropy_min,
        entropy_min_chars=s.entropy_min_chars,
        patterns=s.patterns,
        allow=s.allow,
    )


def warn_file(warn: Warn, path: str, findings: Sequence[Finding], note: str) -> None:
    """One warning per finding, naming ``path:line`` and the kind."""
    for f in findings:
        warn(f"{f.where(path)}: {f.kind} redacted {note}")


def redact_input(warn: Warn, scanner: Scanner, what: str, text: str) -> str:
    """``text`` (a query, injected content, a kg value ...) as it may be recorded, with a
    warning per secret found in it."""
    r: Redacted = scanner.redact(text)
    for f in r.findings:
        warn(f"{what}: {f.kind} redacted before recording")
    return r.text


def redact_key(warn: Warn, scanner: Scanner, what: str, key: str) -> str:
    """``key`` (a chat id, a request id: a name the caller gives to find a record again)
    as the brain records it and looks it up: a secret in it becomes its keyed marker,
    the same for the same key every time, with a warning per secret found."""
    r: Redacted = scanner.redact_name(key)
    for f in r.findings:
        warn(f"{what}: {f.kind} redacted (the brain records and finds this key redacted)")
    return r.text


# --------------------------------------------------------------------------- the walk


def string_like(t: mi.Type) -> bool:
    """Whether a field of type ``t`` can hold a string (alone or in a tuple)."""
    if isinstance(t, mi.StrType):
        return True
    if isinstance(t, mi.LiteralType):
        return any(isinstance(v, str) for v in t.values)
    if isinstance(t, mi.UnionType):
        return any(string_like(x) for x in t.types)
    if isinstance(t, (mi.VarTupleType, mi.ListType, mi.SetType, mi.FrozenSetType)):
        return string_like(t.item_type)
    if isinstance(t, mi.TupleType):
        return any(string_like(x) for x in t.item_types)
    return False


def nested_structs(t: mi.Type) -> list[mi.StructType]:
    """The struct types a field of type ``t`` can hold (alone, in a union or a tuple)."""
    if isinstance(t, mi.StructType):
        return [t]
    if isinstance(t, mi.UnionType):
        return [s for x in t.types for s in nested_structs(x)]
    if isinstance(t, (mi.VarTupleType, mi.ListType, mi.SetType, mi.FrozenSetType)):
        return nested_structs(t.item_type)
    if isinstance(t, mi.TupleType):
        return [s for x in t.item_types for s in nested_structs(x)]
    return []


Plan = tuple[tuple[str, Role | None, bool], ...]


@cache
def _plan(cls: type[msgspec.Struct]) -> Plan:
    """The fields of ``cls`` a walk visits: (name, role of a string field that is not
    ``machine`` or None, whether it can hold a struct). A string field missing from
    ``FIELDS`` counts as text."""
    roles = FIELDS.get(cls, {})
    out = []
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    for f in info.fields:
        role: Role | None = roles.get(f.name, "text") if string_like(f.type) else None
        role = None if role == "machine" else role
        nested = bool(nested_structs(f.type))
        if role is not None or nested:
            out.append((f.name, role, nested))
    return tuple(out)


def strings(obj: msgspec.Struct, texts: set[str], names: set[str]) -> None:
    """Add every non-empty string of ``obj`` (nested parts included) that is not a
    machine field to ``texts`` or ``names`` by its role."""
    _gather(type(obj), (obj,), texts, names)


def _gather(
    cls: type[msgspec.Struct], objs: Sequence[Any], texts: set[str], names: set[str]
) -> None:
    """``strings`` of several structs of one class, field by field (the parts of a trace
    come by the hundred)."""
    for name, role, nested in _plan(cls):
        values = [getattr(o, name) for o in objs]
        if role is not None:
            into = texts if role == "text" else names
            for v in values:
                if type(v) is str:
                    into.add(v)
                elif type(v) is tuple:
                    into.update(x for x in v if type(x) is str)
        if nested:  # a struct, a tuple of structs or None
            items: list[Any] = []
            for v in values:
                if type(v) is tuple:
                    items.extend(v)
                elif v is not None:
                    items.append(v)
            for sub in {type(x) for x in items}:
                group = [x for x in items if type(x) is sub] if len(items) > 1 else items
                if issubclass(sub, msgspec.Struct):
                    _gather(sub, group, texts, names)
    texts.discard("")
    names.discard("")


Edit = Callable[[str, Role, str], str]
"""A change of one string: ``(value, role, where) -> new value``; ``where`` names the
field (``query_traced.steps.chosen``)."""


def rewrite(
    obj: T, edit: Edit, *, where: str = "", select: Callable[[Any], bool] | None = None
) -> tuple[T, list[str]]:
    """``obj`` with ``edit`` applied to every string that is not a machine field, in the
    structs ``select`` accepts (all by default; nested parts are walked either way), and
    where each changed string was (one entry per string, a tuple's too)."""
    new, changed = _rewrite(obj, edit, where, select)
    return new, changed


def _rewrite(
    obj: Any, edit: Edit, where: str, select: Callable[[Any], bool] | None
) -> tuple[Any, list[str]]:
    if type(obj) is tuple:
        parts = [_rewrite(x, edit, where, select) for x in obj]
        inner = [w for _, ws in parts for w in ws]
        return (tuple(x for x, _ in parts), inner) if inner else (obj, [])
    if not isinstance(obj, msgspec.Struct):
        return obj, []
    if not where:
        where = tag_of(obj) if isinstance(obj, Event) else type(obj).__name__
    chosen = select is None or select(obj)
    changes: dict[str, Any] = {}
    changed: list[str] = []
    for name, role, nested in _plan(type(obj)):
        value = getattr(obj, name)
        at = f"{where}.{name}"
        new = value
        if role is not None and chosen:
            new, n = _edit_strings(value, role, at, edit)
            changed += [at] * n
        if nested and new is value:
            new, inner = _rewrite(value, edit, at, select)
            changed += inner
        if new is not value:
            changes[name] = new
    return (msgspec.structs.replace(obj, **changes), changed) if changes else (obj, [])


def _edit_strings(value: Any, role: Role, where: str, edit: Edit) -> tuple[Any, int]:
    if type(value) is str:
        new = edit(value, role, where) if value else value
        return (new, 1) if new != value else (value, 0)
    if type(value) is tuple and any(type(v) is str for v in value):
        items = tuple(edit(v, role, where) if type(v) is str and v else v for v in value)
        n = sum(a != b for a, b in zip(items, value, strict=True))
        return (items, n) if n else (value, 0)
    return value, 0


# --------------------------------------------------------------------------- the net


def _exempt(ev: Event) -> bool:
    """The ``secrets.*`` settings say what a secret is (``secrets.allow`` names the
    strings that are not): they are recorded as they are given."""
    return isinstance(ev, ConfigChanged) and ev.key.startswith("secrets.")


def holds_secret(scanner: Scanner, texts: Iterable[str], names: Iterable[str]) -> bool:
    """Whether any of ``texts`` (the whole scanner) or ``names`` (the name scan) holds a
    secret: one scan of each, joined by line breaks (no rule matches across one)."""
    return scanner.holds("\n".join(texts)) or scanner.holds("\n".join(names), names=True)


_CLEAN_NAMES: dict[tuple[object, ...], set[str]] = {}
"""Names found clean, by the scanner's settings: node ids repeat in every trace, so the
net scans each once. Bounded by ``_CLEAN_MAX``."""
_CLEAN_MAX = 200_000


def _clean_names(scanner: Scanner) -> set[str]:
    key = (
        tuple((r.kind, r.regex.pattern, r.group) for r in scanner.extra),
        tuple(sorted(scanner.allow_literals)),
        tuple(r.pattern for r in scanner.allow_regexes),
    )
    clean = _CLEAN_NAMES.setdefault(key, set())
    if len(clean) > _CLEAN_MAX:
        clean.clear()
    return clean


class Screened(list[Event]):
    """Events that passed the net: ``screened`` hands them back as they are."""


def screened(events: Sequence[Event], scanner: Scanner, warn: Warn) -> Screened:
    """``events`` as they may be recorded: every field that is not a machine field and
    still holds a secret (one a command did not scan) redacted, with one warning per
    field and kind that names them, never the secret. The common case costs one scan of
    the distinct texts and one of the distinct names of the whole batch not seen clean
    before; events that passed already (``Screened``) are not scanned again."""
    if isinstance(events, Screened):
        return events
    if not scanner.enabled:
        return Screened(events)
    texts: set[str] = set()
    names: set[str] = set()
    for ev in events:
        if not _exempt(ev):
            strings(ev, texts, names)
    clean = _clean_names(scanner)
    names -= clean
    if not holds_secret(scanner, texts, names):
        clean |= names
        return Screened(events)
    said: set[tuple[str, str]] = set()

    def edit(value: str, role: Role, where: str) -> str:
        r = scanner.redact(value) if role == "text" else scanner.redact_name(value)
        for f in r.findings:
            if (where, f.kind) not in said:
                said.add((where, f.kind))
                warn(f"{where}: {f.kind} redacted before recording")
        return r.text

    return Screened(ev if _exempt(ev) else rewrite(ev, edit)[0] for ev in events)
