"""Invariants of the memory projection over random event streams: the entity index and
the co-occurrence counts always equal what the current facts say, values stay in
[0, 1], and access only grows."""

from __future__ import annotations

from collections import Counter

from hypothesis import given

from ocb_events.schema import Event
from projections import memory
from tests.projections.streams import as_records, streams


def _expected(state: memory.State) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    index: dict[str, list[str]] = {}
    co: Counter[tuple[str, str]] = Counter()
    for fid in sorted({i for ff in state.files.values() for i in ff.ids}):
        keys = [e.lower() for e in state.facts[fid].entities]
        for k in keys:
            index.setdefault(k, []).append(fid)
        co.update((a, b) for a in keys for b in keys if a != b)
    rows: dict[str, dict[str, int]] = {}
    for (a, b), n in co.items():
        rows.setdefault(a, {})[b] = n
    return {k: sorted(v) for k, v in index.items()}, rows


@given(streams)
def test_entity_index_and_cooccurrence_match_the_current_facts(evs: list[Event]) -> None:
    state = memory.initial()
    last_access: dict[str, tuple[int, int]] = {}
    for rec in as_records(evs):
        state = memory.evolve(state, rec)
        for fid, acc in state.access.items():
            prev = last_access.get(fid, (0, 0))
            assert acc.last_ns >= prev[0] and acc.count >= prev[1]
            last_access[fid] = (acc.last_ns, acc.count)
    index, co = _expected(state)
    assert {k: e.facts for k, e in state.entities.items()} == index
    assert state.co == co
    for f in state.facts.values():
        assert 0.0 <= f.salience <= 1.0 and 0.0 <= f.confidence <= 1.0
    current = {i for ff in state.files.values() for i in ff.ids}
    assert {i for i, f in state.facts.items() if not f.retired_seq} >= current
    assert state.size == len(current)
