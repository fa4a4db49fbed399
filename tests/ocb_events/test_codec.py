"""The record codec: round trips for every event type, JSON, unknown tags, garbage
and upcasters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import given, strategies as st

from ocb_events import codec
from ocb_events.codec import (
    decode_record,
    encode_record,
    fold_run_decoder,
    record_to_json,
    register_upcaster,
    to_builtins,
)
from ocb_events.errors import LogCorrupt, LogError, OcbError, UnknownEventType
from ocb_events.schema import (
    EVENT_TYPES,
    Candidate,
    ConfigChanged,
    Event,
    FileChanged,
    Record,
    Step,
    WorkspaceAttached,
    tag_of,
)
from tests.ocb_events.support import V1_TAGS
from tests.strategies import EVENT_BUILDERS, any_record, records

SEGMENT = "00000000000000000001.seg"
_BASELINE_UPCASTERS = dict(codec._UPCASTERS)


def _tag_id(event_type: type[Event]) -> str:
    tag = event_type.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def _raw(event: dict[str, Any], *, seq: int = 7, ts: int = 1_000, actor: str = "cli") -> bytes:
    """A stored record as raw msgpack, as an older or newer writer may have left it."""
    return msgspec.msgpack.encode({"seq": seq, "ts": ts, "actor": actor, "event": event})


@pytest.fixture
def clean_upcasters() -> Iterator[None]:
    """Restore the module-level upcaster registry after a test."""
    saved = dict(codec._UPCASTERS)
    try:
        yield
    finally:
        codec._UPCASTERS.clear()
        codec._UPCASTERS.update(saved)


# ------------------------------------------------------------------ vocabulary


def test_strategies_cover_every_event_type() -> None:
    assert set(EVENT_BUILDERS) == set(EVENT_TYPES)


def test_tags_are_unique_and_v1_tags_are_never_renamed() -> None:
    tags = [_tag_id(t) for t in EVENT_TYPES]
    assert len(tags) == len(set(tags))
    assert V1_TAGS <= set(tags)


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=_tag_id)
@given(data=st.data())
def test_tag_of_names_the_storage_tag(event_type: type[Event], data: st.DataObject) -> None:
    event = data.draw(EVENT_BUILDERS[event_type]())
    assert tag_of(event) == _tag_id(event_type)


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=_tag_id)
@given(data=st.data())
def test_round_trip_every_event_type(event_type: type[Event], data: st.DataObject) -> None:
    rec = data.draw(records(EVENT_BUILDERS[event_type]()))
    encoded = encode_record(rec)
    decoded = decode_record(encoded)
    assert decoded == rec
    assert type(decoded.event) is event_type
    assert encode_record(decoded) == encoded


@given(rec=any_record)
def test_decode_accepts_a_memoryview(rec: Record) -> None:
    buf = bytearray(encode_record(rec))
    with memoryview(buf) as view:
        assert decode_record(view) == rec


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=_tag_id)
@given(data=st.data())
def test_json_encoding_works_for_every_event_type(
    event_type: type[Event], data: st.DataObject
) -> None:
    rec = data.draw(records(EVENT_BUILDERS[event_type]()))
    text = record_to_json(rec)
    obj = json.loads(text)
    assert obj["seq"] == rec.seq
    assert obj["ts"] == rec.ts
    assert obj["actor"] == rec.actor
    assert obj["event"]["type"] == _tag_id(event_type)
    assert obj["event"] == to_builtins(rec.event)
    assert set(obj["event"]) == {"type", *rec.event.__struct_fields__}


def test_json_names_the_fields_of_parts_stored_as_arrays() -> None:
    step = Step(
        hop=1,
        node="a",
        candidates=(Candidate(target="b", weight=0.5, logit=0.5, tier="habitual"),),
        stop_logit=0.0,
        chosen="b",
    )
    assert to_builtins(step) == {
        "hop": 1,
        "node": "a",
        "stop_logit": 0.0,
        "chosen": "b",
        "followed": [],
        "candidates": [{"target": "b", "weight": 0.5, "logit": 0.5, "tier": "habitual", "uses": 0}],
    }
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(step))[2] == [
        ["b", 0.5, 0.5, "habitual", 0]
    ]


def test_defaulted_fields_are_omitted_and_restored() -> None:
    rec = Record(seq=1, ts=5, actor="sync", event=FileChanged(path="a.md", content_hash="h"))
    raw = msgspec.msgpack.decode(encode_record(rec))
    assert raw["event"] == {"type": "file_changed", "path": "a.md", "content_hash": "h"}
    assert decode_record(encode_record(rec)) == rec


def test_an_old_record_without_a_new_defaulted_field_decodes() -> None:
    # Written before FileChanged grew ``kept`` and ``removed``: both take their defaults.
    old = _raw({"type": "file_changed", "path": "a.md", "content_hash": "h", "added": []})
    rec = decode_record(old)
    assert rec.event == FileChanged(path="a.md", content_hash="h")


# ------------------------------------------------------------------ unknown and garbage


def test_unknown_tag_raises_unknown_event_type_naming_the_tag() -> None:
    raw = _raw({"type": "dream_recorded", "content": "sheep"})
    with pytest.raises(UnknownEventType) as info:
        decode_record(raw, segment=SEGMENT, offset=120)
    err = info.value
    assert err.tag == "dream_recorded"
    assert err.segment == SEGMENT
    assert err.offset == 120
    assert "dream_recorded" in str(err)
    assert isinstance(err, LogError)
    assert err.hint


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"\xc1",
        b"\x00",
        b"\xff" * 16,
        b"not msgpack at all",
        msgspec.msgpack.encode([1, 2, 3]),
        msgspec.msgpack.encode({"seq": 1, "ts": 2, "actor": "cli"}),
        msgspec.msgpack.encode({"seq": 1, "ts": 2, "actor": "cli", "event": "x"}),
        msgspec.msgpack.encode({"seq": 1, "ts": 2, "actor": "cli", "event": {"root": "/"}}),
        _raw({"type": "workspace_attached"}),
        _raw({"type": "workspace_attached", "root": 3}),
        _raw({"type": "config_changed", "v": "two", "key": 1}),
        b"\x81\xa3seq\xa1x",  # a wrong type, then truncated
        b"\x81\xa3seq\xa1x\xc1",  # a wrong type, then trailing bytes
    ],
    ids=repr,
)
def test_garbage_raises_log_corrupt(garbage: bytes) -> None:
    with pytest.raises(LogCorrupt) as info:
        decode_record(garbage, segment=SEGMENT, offset=64)
    assert info.value.segment == SEGMENT
    assert info.value.offset == 64


def test_log_corrupt_names_the_seq_when_the_record_has_one() -> None:
    with pytest.raises(LogCorrupt) as info:
        decode_record(_raw({"type": "workspace_attached"}, seq=42))
    assert info.value.seq == 42


@given(rec=any_record, data=st.data())
def test_every_strict_prefix_of_a_record_is_corrupt(rec: Record, data: st.DataObject) -> None:
    encoded = encode_record(rec)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(LogCorrupt):
        decode_record(encoded[:cut])


def test_invalid_utf8_in_a_record_is_corrupt() -> None:
    encoded = encode_record(Record(seq=1, ts=2, actor="ab", event=WorkspaceAttached(root="/")))
    at = encoded.index(b"ab")
    with pytest.raises(LogCorrupt):
        decode_record(encoded[:at] + b"\x80" + encoded[at + 1 :])


@given(rec=any_record, data=st.data())
def test_a_changed_byte_never_escapes_as_a_foreign_error(rec: Record, data: st.DataObject) -> None:
    encoded = bytearray(encode_record(rec))
    at = data.draw(st.integers(0, len(encoded) - 1))
    encoded[at] = data.draw(st.integers(0, 255))
    try:
        decode_record(bytes(encoded))
    except OcbError as exc:
        assert isinstance(exc, (LogCorrupt, UnknownEventType))


@given(buf=st.binary(max_size=64))
def test_arbitrary_bytes_never_escape_as_a_foreign_error(buf: bytes) -> None:
    try:
        decode_record(buf)
    except OcbError as exc:
        assert isinstance(exc, (LogCorrupt, UnknownEventType))


_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.binary(max_size=8),
)
_values = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_event_dicts = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(V1_TAGS)) | st.text(max_size=6)},
    optional={"v": _values, "key": _values, "value": _values, "root": _values, "path": _values},
)


@given(
    seq=_values | st.integers(1, 100),
    ts=_values | st.integers(0, 100),
    actor=_values | st.text(max_size=4),
    event=_event_dicts | _values,
)
def test_malformed_records_raise_only_our_errors(
    seq: object, ts: object, actor: object, event: object
) -> None:
    buf = msgspec.msgpack.encode({"seq": seq, "ts": ts, "actor": actor, "event": event})
    try:
        rec = decode_record(buf)
    except OcbError as exc:
        assert isinstance(exc, (LogCorrupt, UnknownEventType))
    else:
        assert isinstance(rec, Record)


# ------------------------------------------------------------------ upcasters


def _rename(old: str, new: str) -> codec.Upcaster:
    def lift(event: dict[str, Any]) -> dict[str, Any]:
        lifted = {k: v for k, v in event.items() if k != old}
        lifted[new] = event[old]
        return lifted

    return lift


# A config_changed line as version 1 stored it: the key was called ``name``.
OLD_CONFIG_LINE = _raw(
    {"type": "config_changed", "v": 1, "name": "traversal.max_hops", "value": 8}, seq=3, ts=99
)


@pytest.mark.usefixtures("clean_upcasters")
def test_upcaster_lifts_an_old_shape() -> None:
    register_upcaster("config_changed", 1, _rename("name", "key"))
    rec = decode_record(OLD_CONFIG_LINE)
    assert rec == Record(
        seq=3, ts=99, actor="cli", event=ConfigChanged(key="traversal.max_hops", value=8)
    )


@pytest.mark.usefixtures("clean_upcasters")
@given(old_at=st.lists(st.booleans(), min_size=1, max_size=8))
def test_a_run_decodes_the_records_only_upcasters_read_in_their_place(old_at: list[bool]) -> None:
    register_upcaster("config_changed", 1, _rename("name", "key"))
    new = encode_record(Record(seq=3, ts=99, actor="cli", event=ConfigChanged(key="k", value=1)))
    payloads = [OLD_CONFIG_LINE if old else new for old in old_at]
    decode = fold_run_decoder(["config_changed", "query_traced"])
    got = list(decode([memoryview(p) for p in payloads], list(range(len(payloads))), "s.seg"))
    want = [decode_record(p) for p in payloads]
    assert [(r.seq, r.ts, r.actor, r.event) for r in got] == [
        (r.seq, r.ts, r.actor, r.event) for r in want
    ]
    assert {r.event.key for r in got} <= {"k", "traversal.max_hops"}


def test_a_run_names_the_offset_of_an_undecodable_record() -> None:
    good = encode_record(Record(seq=3, ts=99, actor="cli", event=ConfigChanged(key="k", value=1)))
    decode = fold_run_decoder(["config_changed"])
    run = decode([memoryview(good), memoryview(b"\xc1"), memoryview(good)], [40, 80, 120], "s.seg")
    assert next(run).event == ConfigChanged(key="k", value=1)
    with pytest.raises(LogCorrupt) as info:
        next(run)
    assert (info.value.segment, info.value.offset) == ("s.seg", 80)


@pytest.mark.usefixtures("clean_upcasters")
def test_upcasters_chain_through_versions_in_order() -> None:
    register_upcaster("config_changed", 2, _rename("setting", "key"))
    register_upcaster("config_changed", 1, _rename("name", "setting"))
    rec = decode_record(OLD_CONFIG_LINE)
    assert rec.event == ConfigChanged(key="traversal.max_hops", value=8)


@pytest.mark.usefixtures("clean_upcasters")
def test_a_record_without_a_version_is_version_one() -> None:
    register_upcaster("config_changed", 1, _rename("name", "key"))
    rec = decode_record(_raw({"type": "config_changed", "name": "k", "value": True}))
    assert rec.event == ConfigChanged(key="k", value=True)


@pytest.mark.usefixtures("clean_upcasters")
def test_upcaster_starts_at_the_stored_version() -> None:
    calls: list[int] = []

    def v1(event: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        return event

    register_upcaster("config_changed", 1, v1)
    register_upcaster("config_changed", 2, _rename("name", "key"))
    rec = decode_record(_raw({"type": "config_changed", "v": 2, "name": "k", "value": 1.5}))
    assert rec.event == ConfigChanged(key="k", value=1.5)
    assert calls == []


@pytest.mark.usefixtures("clean_upcasters")
def test_current_records_take_the_fast_path() -> None:
    def boom(event: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("an upcaster ran on a current record")

    register_upcaster("config_changed", 1, boom)
    rec = Record(seq=1, ts=1, actor="cli", event=ConfigChanged(key="k", value="v"))
    assert decode_record(encode_record(rec)) == rec


def test_an_old_shape_without_its_upcaster_is_corrupt() -> None:
    with pytest.raises(LogCorrupt) as info:
        decode_record(OLD_CONFIG_LINE, segment=SEGMENT, offset=16)
    assert info.value.seq == 3
    assert "config_changed" in info.value.reason


@pytest.mark.usefixtures("clean_upcasters")
def test_upcaster_leaving_an_invalid_shape_is_corrupt() -> None:
    register_upcaster("config_changed", 1, lambda event: event)
    with pytest.raises(LogCorrupt):
        decode_record(OLD_CONFIG_LINE)


@pytest.mark.usefixtures("clean_upcasters")
def test_upcasters_do_not_leak_to_other_tags() -> None:
    register_upcaster("config_changed", 1, _rename("name", "key"))
    rec = decode_record(_raw({"type": "workspace_attached", "v": 1, "root": "/w"}))
    assert rec.event == WorkspaceAttached(root="/w")


def test_upcaster_registry_is_clean_between_tests() -> None:
    assert codec._UPCASTERS == _BASELINE_UPCASTERS


def test_a_part_stored_before_a_trailing_field_existed_still_decodes() -> None:
    # parts are arrays: an older writer's shorter array fills the new field's default
    raw = msgspec.msgpack.encode(["b", 0.5, 0.5, "habitual"])
    assert msgspec.msgpack.decode(raw, type=Candidate) == Candidate(
        target="b", weight=0.5, logit=0.5, tier="habitual", uses=0
    )


def test_the_fold_union_mirrors_every_event_with_traces_reduced_to_their_head() -> None:
    from typing import get_args

    from ocb_events.schema import FoldEvent, QueryTraced, QueryTracedHead

    mirrored = [QueryTracedHead if t is QueryTraced else t for t in EVENT_TYPES]
    assert list(get_args(FoldEvent)) == mirrored
    assert tag_of(QueryTracedHead(trace_id="t1")) == "query_traced"


@given(data=st.data())
def test_a_light_decode_keeps_what_folds_need_of_a_trace(data: st.DataObject) -> None:
    from ocb_events.codec import decode_for_fold
    from ocb_events.schema import QueryTraced, QueryTracedHead

    rec = data.draw(records(EVENT_BUILDERS[QueryTraced]()))
    light = decode_for_fold(encode_record(rec))
    assert isinstance(light.event, QueryTracedHead)
    assert (light.seq, light.ts, light.actor) == (rec.seq, rec.ts, rec.actor)
    assert (light.event.trace_id, light.event.chat_id) == (rec.event.trace_id, rec.event.chat_id)
    other = data.draw(any_record)
    if not isinstance(other.event, QueryTraced):  # every other event comes back whole
        light_other = decode_for_fold(encode_record(other))
        assert (light_other.seq, light_other.event) == (other.seq, other.event)


@given(rec=any_record)
def test_the_type_of_a_stored_record_is_read_without_decoding_it(rec: Record) -> None:
    stored = encode_record(rec)
    assert codec.tag_of_stored(stored) == tag_of(rec.event)
    assert codec.tag_of_stored(memoryview(stored)) == tag_of(rec.event)


@given(
    rec=any_record,
    wanted=st.sets(st.sampled_from(sorted(str(t.__struct_config__.tag) for t in EVENT_BUILDERS))),
)
def test_only_types_decodes_the_wanted_records_and_skips_the_others(
    rec: Record, wanted: set[str]
) -> None:
    got = codec.only_types(wanted)(encode_record(rec))
    assert got == (decode_record(encode_record(rec)) if tag_of(rec.event) in wanted else None)


def test_only_types_decodes_an_old_tag_to_learn_its_type() -> None:
    old = msgspec.msgpack.encode({"seq": 1, "ts": 1, "actor": "cli",
                                  "event": {"type": "no_such_type_yet"}})  # fmt: skip
    assert codec.tag_of_stored(old) is None
    with pytest.raises(UnknownEventType):
        codec.only_types({"workspace_attached"})(old)
