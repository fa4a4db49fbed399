"""Binary and JSON codecs for log records, built once and reused.

NOTE: records are stored as msgpack maps of field names, so an added field with a
default still decodes old records. A change of shape gets an upcaster registered by
``(tag, version)``: it lifts the raw mapping of an old event one version up. Decoding
tries the typed fast path first and only falls back to upcasting when that fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ocb_events.errors import LogCorrupt, UnknownEventType
from ocb_events.schema import EVENT_TYPES, FoldRecord, Record

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Record)
_RAW_DECODER = msgspec.msgpack.Decoder()
_FOLD_DECODER = msgspec.msgpack.Decoder(FoldRecord)
_JSON_ENCODER = msgspec.json.Encoder()
_KNOWN_TAGS = frozenset(t.__struct_config__.tag for t in EVENT_TYPES)
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def register_upcaster(tag: str, version: int, fn: Upcaster) -> None:
    """Register ``fn`` to lift events of ``tag`` stored with ``v == version`` to
    ``version + 1``. Events without a ``v`` field are version 1."""
    _UPCASTERS[(tag, version)] = fn


def encode_record(rec: Record) -> bytes:
    """The msgpack bytes of a record."""
    return _ENCODER.encode(rec)


def decode_record(buf: bytes | memoryview, *, segment: str = "", offset: int = 0) -> Record:
    """Decode one record.

    Raises:
        UnknownEventType: the tag is not known to this version.
        LogCorrupt: the bytes are not a record at all.
    """
    try:
        return _DECODER.decode(buf)
    except msgspec.ValidationError as exc:
        return _decode_slow(buf, exc, segment, offset)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise LogCorrupt(segment, offset, -1, f"undecodable record: {exc}") from exc


def decode_for_fold(
    buf: bytes | memoryview, *, segment: str = "", offset: int = 0
) -> Record | FoldRecord:
    """Decode one record for folding: a query trace comes back as its head only
    (every other event in full). Anything unusual takes the full path of
    ``decode_record`` (upcasters, errors)."""
    try:
        return _FOLD_DECODER.decode(buf)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        return decode_record(buf, segment=segment, offset=offset)


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
