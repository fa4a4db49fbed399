"""Binary and JSON codecs for log records, built once and reused.

NOTE: records are stored as msgpack maps of field names, so an added field with a
default still decodes old records. A query trace is stored compact: its record map
holds a fifth key ``z`` (so its first byte is ``0x85``, never that of a record of the
old encoding, ``0x84``) with the trace's seeds, steps and fired ids packed as columns
(``ocb_events.packing``), and its event map holds every other field of the trace, so
``decode_for_fold`` reads the head of either encoding alike and skips the body as one
binary string. A weight update is stored packed too (``PACKED_UPDATES``: its record
map starts with the key ``event``, whose tag ``edges_packed`` no older version knows,
so an older reader refuses it instead of misreading it), its node ids once in a table
and its numbers as arrays (``ocb_events.packed_updates``). Decoding gives a ``Record``
equal to the one encoded (floats bit for bit); every record of any encoding decodes,
and the encoding is self-contained (no dictionary outside the record), so any log
that stores ``encode_record``'s bytes holds the compact form. A change of shape gets
an upcaster registered by ``(tag, version)``: it lifts the raw mapping of an old event
one version up. Decoding tries the typed fast path first and only falls back to
upcasting when that fails.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, Union, get_args

import msgspec

from ocb_events.errors import LogCorrupt, UnknownEventType
from ocb_events.packed_updates import BadUpdates, pack_updates, unpack_updates
from ocb_events.packing import BadBody, pack_trace, unpack_trace
from ocb_events.parts import LearnParams, QueryParams
from ocb_events.schema import (
    EVENT_TYPES,
    EdgesUpdated,
    FoldEvent,
    FoldRecord,
    QueryTraced,
    Record,
)

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Record)
_RAW_DECODER = msgspec.msgpack.Decoder()
_FOLD_DECODER = msgspec.msgpack.Decoder(FoldRecord)
_JSON_ENCODER = msgspec.json.Encoder()
_KNOWN_TAGS = frozenset(t.__struct_config__.tag for t in EVENT_TYPES)
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}
PACKED_TRACE = 0x85
"""The first byte of a compact trace record (a map of five keys)."""


class TraceHead(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="query_traced",
):
    """Every field of a ``QueryTraced`` but its packed body (seeds, steps, fired)."""

    trace_id: str
    query: str
    stop_reason: str
    context_chars: int
    params: QueryParams
    chat_id: str = ""
    vetoed: tuple[str, ...] = ()
    route: str = ""
    route_mode: str = ""


class _PackedTrace(msgspec.Struct, frozen=True, kw_only=True):
    """A compact trace record: the head as an event map, the body in ``z``."""

    seq: int
    ts: int
    actor: str
    event: TraceHead
    z: bytes


_PACKED_DECODER = msgspec.msgpack.Decoder(_PackedTrace)
_HEAD_FIELDS = TraceHead.__struct_fields__

PACKED_UPDATES = b"\x84\xa5event"
"""The first bytes of a packed weight update: a record map whose first key is
``event`` (a record of the msgpack form starts with ``seq``)."""
PACKED_TAG = "edges_packed"
"""The tag of a packed weight update's event map: a tag no event has, so a version of
OpenClawBrain that does not know the packed form refuses the record as an unknown
event type (upgrade to read it) instead of misreading it."""


class UpdatesHead(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag=PACKED_TAG,
):
    """An ``EdgesUpdated`` with its updates and baselines packed in ``w``
    (``ocb_events.packed_updates``)."""

    rule: str
    cause_seq: int
    params: LearnParams | None = None
    w: bytes


class _PackedUpdates(msgspec.Struct, frozen=True, kw_only=True):
    """A packed weight update record, its event first (``PACKED_UPDATES``)."""

    event: UpdatesHead
    seq: int
    ts: int
    actor: str


_UPDATES_DECODER = msgspec.msgpack.Decoder(_PackedUpdates)
_UPDATES_KEPT = ("rule", "cause_seq", "params")


def register_upcaster(tag: str, version: int, fn: Upcaster) -> None:
    """Register ``fn`` to lift events of ``tag`` stored with ``v == version`` to
    ``version + 1``. Events without a ``v`` field are version 1."""
    _UPCASTERS[(tag, version)] = fn


def encode_record(rec: Record) -> bytes:
    """The msgpack bytes of a record (a query trace in its compact form)."""
    ev = rec.event
    if type(ev) is QueryTraced:
        head = TraceHead(**{f: getattr(ev, f) for f in _HEAD_FIELDS})
        body = pack_trace(ev.seeds, ev.steps, ev.fired)
        return _ENCODER.encode(
            _PackedTrace(seq=rec.seq, ts=rec.ts, actor=rec.actor, event=head, z=body)
        )
    if type(ev) is EdgesUpdated:
        try:
            w = pack_updates(ev.updates, ev.baselines)
        except (ValueError, OverflowError, TypeError):
            return _ENCODER.encode(rec)  # not representable packed: the msgpack form
        kept = {f: getattr(ev, f) for f in _UPDATES_KEPT}
        packed = _PackedUpdates(
            event=UpdatesHead(w=w, **kept), seq=rec.seq, ts=rec.ts, actor=rec.actor
        )
        return _ENCODER.encode(packed)
    return _ENCODER.encode(rec)


def is_packed_updates(buf: bytes | memoryview) -> bool:
    """Whether ``buf`` is a record of the packed weight update form."""
    return buf[:7] == PACKED_UPDATES


def decode_record(buf: bytes | memoryview, *, segment: str = "", offset: int = 0) -> Record:
    """Decode one record.

    Raises:
        UnknownEventType: the tag is not known to this version.
        LogCorrupt: the bytes are not a record at all.
    """
    try:
        if buf and buf[0] == PACKED_TRACE:
            return _decode_packed(buf, segment, offset)
        if is_packed_updates(buf):
            return _decode_updates(buf, segment, offset)
        return _DECODER.decode(buf)
    except msgspec.ValidationError as exc:
        return _decode_slow(buf, exc, segment, offset)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise LogCorrupt(segment, offset, -1, f"undecodable record: {exc}") from exc


class _TypeOnly(msgspec.Struct):
    type: str


class _Peek(msgspec.Struct):
    event: _TypeOnly


_PEEK = msgspec.msgpack.Decoder(_Peek)


def tag_of_stored(buf: bytes | memoryview) -> str | None:
    """The event type of a stored record, read without decoding the rest of it (None
    when it cannot be read that way: decode the record to know)."""
    if buf and buf[0] == PACKED_TRACE:
        return "query_traced"
    if is_packed_updates(buf):
        return "edges_updated"
    try:
        tag = _PEEK.decode(buf).event.type
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        return None
    return tag if tag in _KNOWN_TAGS else None  # an old tag: the upcasters name it


def only_types(wanted: Collection[str]) -> Callable[..., Record | None]:
    """A decoder (``decode(buf, *, segment, offset)``) of the records whose event type
    is in ``wanted``; None for the others, whose type it reads without decoding them."""
    kept = frozenset(wanted)

    def decode(buf: bytes | memoryview, *, segment: str = "", offset: int = 0) -> Record | None:
        tag = tag_of_stored(buf)
        if tag is not None and tag not in kept:
            return None
        return decode_record(buf, segment=segment, offset=offset)

    return decode


def decode_for_fold(
    buf: bytes | memoryview, *, segment: str = "", offset: int = 0
) -> Record | FoldRecord:
    """Decode one record for folding: a query trace comes back as its head only
    (every other event in full). Anything unusual takes the full path of
    ``decode_record`` (upcasters, errors)."""
    if is_packed_updates(buf):
        return decode_record(buf, segment=segment, offset=offset)
    try:
        return _FOLD_DECODER.decode(buf)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        return decode_record(buf, segment=segment, offset=offset)


def _decode_updates(buf: bytes | memoryview, segment: str, offset: int) -> Record:
    packed = _UPDATES_DECODER.decode(buf)
    head = packed.event
    try:
        updates, baselines = unpack_updates(head.w)
    except BadUpdates as exc:
        raise LogCorrupt(segment, offset, packed.seq, f"bad weight updates: {exc}") from exc
    event = EdgesUpdated(
        updates=updates,
        baselines=baselines,
        **{f: getattr(head, f) for f in _UPDATES_KEPT},
    )
    return Record(seq=packed.seq, ts=packed.ts, actor=packed.actor, event=event)


def _decode_packed(buf: bytes | memoryview, segment: str, offset: int) -> Record:
    packed = _PACKED_DECODER.decode(buf)
    try:
        seeds, steps, fired = unpack_trace(packed.z)
    except BadBody as exc:
        raise LogCorrupt(segment, offset, packed.seq, f"bad trace body: {exc}") from exc
    head = packed.event
    event = QueryTraced(
        seeds=seeds, steps=steps, fired=fired, **{f: getattr(head, f) for f in _HEAD_FIELDS}
    )
    return Record(seq=packed.seq, ts=packed.ts, actor=packed.actor, event=event)


def _decode_slow(buf: bytes | memoryview, exc: Exception, segment: str, offset: int) -> Record:
    try:
        raw = _RAW_DECODER.decode(buf)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc2:
        # the typed decoder can fail on an early field before it sees the rest
        raise LogCorrupt(segment, offset, -1, f"undecodable record: {exc2}") from exc2
    event = raw.get("event") if isinstance(raw, dict) else None
    tag = event.get("type") if isinstance(event, dict) else None
    seq = raw.get("seq", -1) if isinstance(raw, dict) else -1
    if not isinstance(tag, str) or not isinstance(event, dict):
        raise LogCorrupt(segment, offset, seq, f"record has no event type: {exc}") from exc
    if tag == PACKED_TAG:
        raise LogCorrupt(segment, offset, seq, f"invalid packed weight update: {exc}") from exc
    if tag not in _KNOWN_TAGS:
        raise UnknownEventType(tag, segment, offset) from exc
    try:
        version = int(event.get("v", 1))
    except (TypeError, ValueError, OverflowError) as exc2:
        raise LogCorrupt(segment, offset, seq, f"bad version of a {tag} record") from exc2
    upgraded = dict(event)
    while (tag, version) in _UPCASTERS:
        upgraded = _UPCASTERS[(tag, version)](upgraded)
        version += 1
    upgraded.pop("v", None)
    try:
        return msgspec.convert({**raw, "event": upgraded}, Record)
    except msgspec.ValidationError as exc2:
        raise LogCorrupt(segment, offset, seq, f"invalid {tag} record: {exc2}") from exc2


def to_builtins(obj: Any) -> Any:
    """Structs (events and their array-stored parts alike) as dicts of field names,
    tuples as lists: the readable form of a record."""
    if isinstance(obj, msgspec.Struct):
        out: dict[str, Any] = {}
        config = obj.__struct_config__
        if config.tag_field is not None:
            out[config.tag_field] = config.tag
        for name in obj.__struct_fields__:
            out[name] = to_builtins(getattr(obj, name))
        return out
    if isinstance(obj, (tuple, list)):
        return [to_builtins(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_builtins(v) for k, v in obj.items()}
    return obj


def record_to_json(rec: Record) -> bytes:
    """One record as a JSON object with named fields throughout (the event under
    ``event`` with its ``type``)."""
    return _JSON_ENCODER.encode(to_builtins(rec))


# ------------------------------------------------------------ decoding for rebuilds


class EdgesUpdatedRaw(msgspec.Struct, frozen=True, tag_field="type", tag="edges_updated"):
    """What the graph's fold reads of an ``edges_updated`` record: its updates and its
    baselines, left as msgpack bytes, which a rebuild parses in bulk
    (``replay.weights``)."""

    updates: msgspec.Raw
    baselines: msgspec.Raw = msgspec.Raw(b"\x90")  # an empty array


class EdgesPackedRaw(msgspec.Struct, frozen=True, tag_field="type", tag=PACKED_TAG):
    """What the graph's fold reads of a packed weight update: its rule, its cause and
    its packed body (``ocb_events.packed_updates``), which a rebuild parses a run at a
    time (``replay.weights``)."""

    rule: str
    cause_seq: int
    w: bytes


class Skipped(msgspec.Struct, frozen=True, tag_field="type"):
    """A record none of the folds at hand reads: only its envelope is decoded."""


class FoldPeek(msgspec.Struct, frozen=True, kw_only=True):
    """A record as ``fold_decoder`` returns it (its ``event`` a fold event, an
    ``EdgesUpdatedRaw`` or a ``Skipped``)."""

    seq: int
    ts: int
    actor: str
    event: Any


_FOLD_TYPES: dict[str, type] = {str(t.__struct_config__.tag): t for t in get_args(FoldEvent)}
_SKIPPED: dict[str, type] = {
    tag: msgspec.defstruct(f"Skipped_{tag}", [], bases=(Skipped,), tag=tag, frozen=True)
    for tag in sorted({*_FOLD_TYPES, PACKED_TAG})
}


def fold_decoder(tags: Collection[str]) -> Callable[..., Record | FoldRecord | FoldPeek]:
    """A decoder (``decode(buf, *, segment, offset)``) for folds that read only the
    events tagged ``tags``: those come back decoded for folding (``edges_updated`` as an
    ``EdgesUpdatedRaw``), every other event as a ``Skipped`` with no payload fields,
    which costs a fraction of a decode. A record the fast path cannot read (an old
    shape, a bad one) takes the full path of ``decode_for_fold``. Built once per set
    of tags."""
    return _fold_decoder(frozenset(tags))


def fold_run_decoder(tags: Collection[str]) -> _Run:
    """``fold_decoder(tags)`` for a run of records (``decode(payloads, offsets,
    segment)``, as ``ocb_events.segments.read_runs`` calls it): the payloads decoded
    one after another as they are taken, by the fast path with no Python step of its
    own; one that it cannot read, by ``fold_decoder``. Decoded as they are taken, each
    record is gone before the next is made: records kept alive by the hundred outlive
    the collector's young generations, and each full collection walks the folded
    states. The payloads must be views of immutable bytes: an ``EdgesUpdatedRaw``
    keeps a view of them (and so the whole buffer alive), which a caller that keeps
    it copies."""
    return _fold_run_decoder(frozenset(tags))


_Run = Callable[[list[memoryview], Sequence[int], str], Iterator[Record | FoldRecord | FoldPeek]]


@functools.cache
def _fold_run_decoder(tags: frozenset[str]) -> _Run:
    fast, one = _envelope_decoder(tags).decode, _fold_decoder(tags)

    def decode_run(
        views: list[memoryview], offsets: Sequence[int], segment: str
    ) -> Iterator[Record | FoldRecord | FoldPeek]:
        at = 0
        while at < len(views):
            try:
                for rec in map(fast, views[at:] if at else views):
                    at += 1
                    yield rec
            except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
                yield one(views[at], segment=segment, offset=offsets[at])
                at += 1

    return decode_run


@functools.cache
def _envelope_decoder(tags: frozenset[str]) -> msgspec.msgpack.Decoder[Any]:
    """The decoder of records whose events tagged ``tags`` are decoded for folding and
    every other event as a ``Skipped``."""
    kinds = [
        (EdgesUpdatedRaw if tag == "edges_updated" else _FOLD_TYPES[tag])
        if tag in tags
        else _SKIPPED[tag]
        for tag in sorted(_FOLD_TYPES)
    ]
    kinds.append(EdgesPackedRaw if "edges_updated" in tags else _SKIPPED[PACKED_TAG])
    envelope = msgspec.defstruct(
        "FoldPeekOf",
        [("event", Union[tuple(kinds)])],  # noqa: UP007 (a union built at run time)
        bases=(FoldPeek,),
        kw_only=True,
        frozen=True,
    )
    return msgspec.msgpack.Decoder(envelope)


@functools.cache
def _fold_decoder(tags: frozenset[str]) -> Callable[..., Record | FoldRecord | FoldPeek]:
    decoder = _envelope_decoder(tags)

    def decode(
        buf: bytes | memoryview, *, segment: str = "", offset: int = 0
    ) -> Record | FoldRecord | FoldPeek:
        try:
            peek: FoldPeek = decoder.decode(buf)
            ev = peek.event
            if type(ev) is EdgesUpdatedRaw and not isinstance(buf, bytes):
                # its Raw holds on to the buffer, which the log reuses: keep a copy
                copy = EdgesUpdatedRaw(
                    msgspec.Raw(bytes(ev.updates)), msgspec.Raw(bytes(ev.baselines))
                )
                return msgspec.structs.replace(peek, event=copy)
            return peek
        except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
            return decode_for_fold(buf, segment=segment, offset=offset)

    return decode
