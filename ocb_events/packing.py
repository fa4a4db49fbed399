"""The packed body of a query trace: its seeds, steps and fired ids as columns.

NOTE: the layout here is part of the storage format (records of the compact encoding,
``ocb_events.codec``); change it only with a new ``BODY_VERSION``, and keep decoding
every version ever written.

A trace holds a few hundred values of a few kinds: node ids (each repeated across
seeds, steps, candidates and fired), scores, and small ints. The body stores every
string once in a table and each use as its index; each float column as its raw IEEE
bytes, four bytes a value when every value of the column is exactly a float32 and
eight otherwise, and the candidates' logits only where they differ from their weights
(with those positions). The decoded parts equal the packed ones exactly (floats bit
for bit)::

    [BODY_VERSION, strings,
     seed ids, seed scores, seed lexical, seed vector,
     step hops, step nodes, step stop logits, step chosen, step followed, step sizes,
     candidate targets, candidate weights, positions of the logits that differ, those
     logits, candidate tiers, candidate uses, fired]
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

import msgspec

from ocb_events.parts import SeedHit, Step

BODY_VERSION = 1

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(tuple[Any, ...])


_Body = tuple[tuple[SeedHit, ...], tuple[Step, ...], tuple[str, ...]]


class BadBody(ValueError):
    """The packed body of a trace is not one this version can read."""


def _floats(values: Iterable[float]) -> bytes:
    wide = array("d", values)
    raw = wide.tobytes()
    try:
        narrow = array("f", wide)
    except OverflowError:
        return b"\x08" + raw
    if array("d", narrow).tobytes() == raw:
        return b"\x04" + narrow.tobytes()
    return b"\x08" + raw


def _unfloats(data: bytes, count: int) -> list[float]:
    if not data:
        raise BadBody("empty float column")
    width = data[0]
    if width not in (4, 8) or (len(data) - 1) % width:
        raise BadBody(f"float column of width {width}")
    col = array("f" if width == 4 else "d")
    col.frombytes(data[1:])
    if len(col) != count:
        raise BadBody("float column of the wrong length")
    return col.tolist()


def _same(a: float, b: float) -> bool:
    """Whether two floats are the same bits (0.0 and -0.0 differ, a NaN is itself)."""
    return array("d", (a,)).tobytes() == array("d", (b,)).tobytes()


class _Strings:
    __slots__ = ("index", "table")

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.table: list[str] = []

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.table)
            self.table.append(s)
        return i


def pack_trace(seeds: Sequence[SeedHit], steps: Sequence[Step], fired: Sequence[str]) -> bytes:
    """The packed body of a trace's seeds, steps and fired ids."""
    ids = _Strings()
    cands = [c for s in steps for c in s.candidates]
    differ = [i for i, c in enumerate(cands) if not _same(c.logit, c.weight)]
    body = (
        BODY_VERSION,
        ids.table,
        [ids(h.node_id) for h in seeds],
        _floats(h.score for h in seeds),
        _floats(h.lexical for h in seeds),
        _floats(h.vector for h in seeds),
        [s.hop for s in steps],
        [ids(s.node) for s in steps],
        _floats(s.stop_logit for s in steps),
        [ids(s.chosen) for s in steps],
        [[ids(f) for f in s.followed] for s in steps],
        [len(s.candidates) for s in steps],
        [ids(c.target) for c in cands],
        _floats(c.weight for c in cands),
        differ,
        _floats(cands[i].logit for i in differ),
        [ids(c.tier) for c in cands],
        [c.uses for c in cands],
        [ids(f) for f in fired],
    )
    return _ENCODER.encode(body)


def unpack_trace(data: bytes) -> tuple[tuple[SeedHit, ...], tuple[Step, ...], tuple[str, ...]]:
    """The seeds, steps and fired ids of a packed body.

    Raises:
        BadBody: the body is damaged or of an unknown version (its caller names the
            record).
    """
    try:
        return _unpack(_DECODER.decode(data))
    except (msgspec.DecodeError, msgspec.ValidationError, LookupError, TypeError) as exc:
        raise BadBody(str(exc)) from exc
    except ValueError as exc:  # a column of the wrong length (zip strict)
        raise BadBody(str(exc)) from exc


Columns = tuple[
    list[str], list[int], bytes, bytes, bytes, list[int], list[int], bytes, list[int],
    list[list[int]], list[int], list[int], bytes, list[int], bytes, list[int], list[int],
    list[int],
]  # fmt: skip
"""The columns of a packed body as ``trace_columns`` gives them (the layout above
without its version)."""

_COLUMNS = msgspec.msgpack.Decoder(
    tuple[
        int,
        list[str],
        list[int],
        bytes,
        bytes,
        bytes,
        list[int],
        list[int],
        bytes,
        list[int],
        list[list[int]],
        list[int],
        list[int],
        bytes,
        list[int],
        bytes,
        list[int],
        list[int],
        list[int],
    ]  # fmt: skip
)


def _width_ok(data: bytes, count: int) -> bool:
    return bool(data) and data[0] in (4, 8) and len(data) - 1 == count * data[0]


def _in_table(size: int, ids: bytes | list[int]) -> bool:
    return not ids or (min(ids) >= 0 and max(ids) < size)


def trace_columns(data: bytes) -> Columns:
    """The columns of a packed body as stored, checked but not built into parts: the
    string table, then each column in the order of the layout above (ids as indices
    into the table, floats as their raw bytes: a width byte, 4 or 8, then the values
    in native order). For readers that gather many traces' columns at once
    (``replay.trace_rows``); ``unpack_trace`` gives the same values as parts.

    Raises:
        BadBody: the body is damaged or of an unknown version.
    """
    cols: Columns = _columns(_COLUMNS, data)
    ok = _agree(cols)
    if not ok:
        raise BadBody("the columns of the trace body do not agree")
    return cols


Ints = bytes | list[int]
"""An int column of ``narrow_columns``: its values as bytes (one byte a value, each
below 128) when msgpack stored every one as a positive fixint, else as ints."""

Lists = tuple[bytes, bytes] | list[list[int]]
"""A column of lists of ints (the steps' followed ids) in ``narrow_columns``: how many
each list holds and all their values, as bytes of one-byte values, when msgpack stored
every list as a fixarray of positive fixints; else the lists of ints."""

NarrowColumns = tuple[
    list[str], Ints, bytes, bytes, bytes, Ints, Ints, bytes, Ints, Lists, Ints,
    Ints, bytes, Ints, bytes, Ints, Ints, Ints,
]  # fmt: skip
"""The columns of a packed body as ``narrow_columns`` gives them."""

_NARROW = msgspec.msgpack.Decoder(
    tuple[
        int,
        list[str],
        msgspec.Raw,
        bytes,
        bytes,
        bytes,
        msgspec.Raw,
        msgspec.Raw,
        bytes,
        msgspec.Raw,
        msgspec.Raw,
        msgspec.Raw,
        msgspec.Raw,
        bytes,
        msgspec.Raw,
        bytes,
        msgspec.Raw,
        msgspec.Raw,
        msgspec.Raw,
    ]  # fmt: skip
)
_INTS = msgspec.msgpack.Decoder(list[int])
_LISTS = msgspec.msgpack.Decoder(list[list[int]])
_FIXARRAYS = bytes(range(0x90, 0xA0))


def _header(data: bytes) -> tuple[int, int]:
    """How many items an array holds and where they start (-1, 0: not an array)."""
    head = data[0] if data else 0
    if 0x90 <= head <= 0x9F:
        return head & 0x0F, 1
    if head == 0xDC and len(data) >= 3:
        return int.from_bytes(data[1:3], "big"), 3
    if head == 0xDD and len(data) >= 5:
        return int.from_bytes(data[1:5], "big"), 5
    return -1, 0


def _ints(raw: msgspec.Raw) -> Ints:
    """An int column: the bytes after its array's header when each is one value (a
    positive fixint: below 0x80), else its ints (msgspec checks them)."""
    data = bytes(raw)
    count, skip = _header(data)
    values = data[skip:]
    if len(values) == count and values.isascii():
        return values
    return _INTS.decode(data)


def _lists(raw: msgspec.Raw) -> Lists:
    """A column of lists of ints: the length of each and all their values as bytes when
    each list is a fixarray (up to 15 items) of values below 0x80, else the lists."""
    data = bytes(raw)
    count, skip = _header(data)
    at, lens = skip, bytearray()
    for _ in range(count):
        head = data[at] if at < len(data) else 0
        if not 0x90 <= head <= 0x9F:
            return _LISTS.decode(data)
        lens.append(head & 0x0F)
        at += 1 + (head & 0x0F)
    values = data[skip:].translate(None, _FIXARRAYS)
    if count < 0 or at != len(data) or len(values) != sum(lens) or not values.isascii():
        return _LISTS.decode(data)
    return bytes(lens), values


def _all_in_table(size: int, columns: list[Ints]) -> bool:
    """Whether every value of the columns indexes a table of ``size`` (columns that
    are all bytes checked at once: their values are never negative)."""
    try:
        joined = b"".join(columns)  # type: ignore[arg-type]  # (a column of ints: TypeError)
    except TypeError:
        return all(_in_table(size, ids) for ids in columns)
    return not joined or max(joined) < size


def list_parts(lists: Lists) -> tuple[Ints, Ints]:
    """How many items each list holds and all the items, list after list."""
    if isinstance(lists, tuple):
        return lists
    return [len(v) for v in lists], list(chain(*lists))


def _agree(cols: Columns | NarrowColumns) -> bool:
    """Whether a body's columns agree with each other (lengths, widths, every index
    inside its table), as ``trace_columns`` and ``narrow_columns`` check them."""
    (strs, s_ids, s_score, s_lex, s_vec, hops, nodes, stops, chosen, followed, sizes,
     c_tgt, c_w, differ, c_logit, c_tier, c_uses, fired) = cols  # fmt: skip
    n, k, m, size = len(s_ids), len(hops), len(c_tgt), len(strs)
    fol_lens, fol_ids = list_parts(followed)
    return (
        _width_ok(s_score, n)
        and _width_ok(s_lex, n)
        and _width_ok(s_vec, n)
        and len(nodes) == len(chosen) == len(fol_lens) == len(sizes) == k
        and _width_ok(stops, k)
        and sum(sizes) == m
        and (not sizes or min(sizes) >= 0)
        and len(c_tier) == len(c_uses) == m
        and _width_ok(c_w, m)
        and _width_ok(c_logit, len(differ))
        and _in_table(m, differ)
        and _all_in_table(size, [s_ids, nodes, chosen, c_tgt, c_tier, fired, fol_ids])
    )


def narrow_columns(data: bytes) -> NarrowColumns:
    """The columns of a packed body as ``trace_columns`` gives them, checked the same
    way, except that an int column whose values are each stored in one byte (below 128:
    a body's string table and candidate lists are mostly smaller) comes as those bytes
    (``Ints``), read with no Python int a value (``numpy.frombuffer``).

    Raises:
        BadBody: the body is damaged or of an unknown version.
    """
    b = _columns(_NARROW, data)
    try:
        parts: list[Any] = [_ints(v) if type(v) is msgspec.Raw else v for v in (*b[1:9], *b[10:])]
        parts.insert(8, _lists(b[9]))
        cols: NarrowColumns = (b[0], *parts)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadBody(str(exc)) from exc
    ok = _agree(cols)
    if not ok:
        raise BadBody("the columns of the trace body do not agree")
    return cols


RawColumns = tuple[Any, ...]
"""The columns of a packed body as ``raw_columns`` gives them: the string table, each
float column as its raw bytes (as in ``trace_columns``), and each int column and the
steps' followed lists as their msgpack bytes (``msgspec.Raw``), neither read nor
checked."""


def raw_columns(data: bytes) -> RawColumns:
    """The columns of a packed body split apart but neither read nor checked, in the
    order of ``trace_columns``: for readers that read and check many bodies' columns at
    once, as ``narrow_columns`` does one body's (``replay.trace_rows``).

    Raises:
        BadBody: the body is not a packed body of this version.
    """
    return _columns(_NARROW, data)


def _columns(decoder: msgspec.msgpack.Decoder[Any], data: bytes) -> tuple[Any, ...]:
    """A packed body's columns as ``decoder`` reads them, past its version.

    Raises:
        BadBody: the body does not decode, or is of an unknown version.
    """
    try:
        b = decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadBody(str(exc)) from exc
    if b[0] != BODY_VERSION:
        raise BadBody(f"unknown trace body (version {b[0]})")
    return tuple(b[1:])


def _unpack(b: tuple[Any, ...]) -> tuple[tuple[SeedHit, ...], tuple[Step, ...], tuple[str, ...]]:
    if len(b) != 19 or b[0] != BODY_VERSION:
        raise BadBody(f"unknown trace body (version {b[0] if b else '?'})")
    (_, strs, s_ids, s_score, s_lex, s_vec, hops, nodes, stops, chosen, followed, sizes,
     c_tgt, c_w, differ, c_logit, c_tier, c_uses, fired) = b  # fmt: skip
    n = len(s_ids)
    seeds = list(
        zip(
            [strs[i] for i in s_ids],
            _unfloats(s_score, n),
            _unfloats(s_lex, n),
            _unfloats(s_vec, n),
            strict=True,
        )
    )
    m = len(c_tgt)
    logits = _unfloats(c_w, m)
    weights = list(logits)
    for i, lg in zip(differ, _unfloats(c_logit, len(differ)), strict=True):
        logits[i] = lg
    cands = list(
        zip(
            [strs[t] for t in c_tgt],
            weights,
            logits,
            [strs[r] for r in c_tier],
            c_uses,
            strict=True,
        )
    )
    if sum(sizes) != m or any(k < 0 for k in sizes):
        raise BadBody("candidate counts do not add up")
    steps, at = [], 0
    stop_logits = _unfloats(stops, len(hops))
    for hop, node, stop, ch, fol, k in zip(
        hops, nodes, stop_logits, chosen, followed, sizes, strict=True
    ):
        steps.append((hop, strs[node], cands[at : at + k], stop, strs[ch], [strs[f] for f in fol]))
        at += k
    body: _Body = msgspec.convert((seeds, steps, [strs[f] for f in fired]), _Body)
    return body
