"""The bulk parse of weight updates: exactly what decoding each record gives, or
nothing at all."""

from __future__ import annotations

import msgspec
import numpy as np
from hypothesis import given, strategies as st

from ocb_events.schema import STOP, EdgeDeltas
from replay.msgpack_scan import scan_updates
from tests.strategies import printable

_ENC = msgspec.msgpack.Encoder()
_KEY = msgspec.msgpack.Decoder(tuple[str, tuple[str, ...]])
# ids short and long: fixstr, str8 (32+ bytes) and str16 (256+ bytes) on the wire
_ids = st.one_of(
    st.text(printable, min_size=1, max_size=12),
    st.text(printable, min_size=30, max_size=40),
    st.text("ab", min_size=256, max_size=300),
    st.just(STOP),
)
_floats = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def _update(draw: st.DrawFn) -> EdgeDeltas:
    n = draw(st.one_of(st.integers(0, 4), st.integers(14, 20)))  # fixarray and array16
    targets = draw(st.lists(_ids, min_size=n, max_size=n))
    deltas = draw(st.lists(_floats, min_size=n, max_size=n))
    return EdgeDeltas(source=draw(_ids), targets=tuple(targets), deltas=tuple(deltas))


_records = st.lists(st.lists(_update(), max_size=18).map(tuple), min_size=1, max_size=6)


@given(records=_records)
def test_the_scan_reads_what_decoding_reads(records: list[tuple[EdgeDeltas, ...]]) -> None:
    got = scan_updates([_ENC.encode(r) for r in records])
    assert got is not None
    flat = [u for r in records for u in r]
    assert got.counts == [len(r) for r in records]
    assert got.lengths.tolist() == [len(u.targets) for u in flat]
    keys = [got.data[a:b] for a, b in zip(got.key_start, got.key_end, strict=True)]
    assert [_KEY.decode(b"\x92" + k) for k in keys] == [(u.source, u.targets) for u in flat]
    want = np.array([d for u in flat for d in u.deltas], dtype=np.float64)
    assert got.deltas.tobytes() == want.tobytes()  # -0.0 and every bit kept


@given(records=_records, cut=st.integers(0, 3))
def test_lists_of_two_lengths_are_not_scanned(
    records: list[tuple[EdgeDeltas, ...]], cut: int
) -> None:
    odd = [
        (u.source, u.targets, u.deltas[: len(u.deltas) - 1 - cut]) for u in (_update_with_one(),)
    ]
    assert scan_updates([*(_ENC.encode(r) for r in records), _ENC.encode(odd)]) is None


def _update_with_one() -> EdgeDeltas:
    return EdgeDeltas(source="a", targets=("b", "c", "d", "e"), deltas=(0.1, 0.2, 0.3, 0.4))


def test_deltas_that_are_not_float64_are_not_scanned() -> None:
    assert scan_updates([_ENC.encode([["a", ["b"], [1]]])]) is None  # an int
    assert scan_updates([_ENC.encode([["a", ["b"], [0.5]]])]) is not None
    assert scan_updates([_ENC.encode([["a", ["b", 2], [0.5, 0.5]]])]) is None  # a target


def test_records_without_updates_scan_to_nothing() -> None:
    got = scan_updates([_ENC.encode(()), _ENC.encode(())])
    assert got is not None and got.counts == [0, 0] and len(got.deltas) == 0
