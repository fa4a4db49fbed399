"""Properties every projection must hold, over generated event streams."""

from __future__ import annotations

import math

import pytest
from hypothesis import given

from ocb_events.schema import Event
from projections import PROJECTIONS, ROUTES, fold as registry_fold
from tests.projections.streams import as_records, streams

NAMES = sorted(PROJECTIONS)


def fold(name: str, evs: list[Event], start: int = 1, state: object = None) -> object:
    mod = PROJECTIONS[name]
    st_ = mod.initial() if state is None else state
    for rec in as_records(evs, start):
        st_ = mod.evolve(st_, rec)
    return st_


def snap(name: str, state: object) -> bytes:
    data: bytes = PROJECTIONS[name].snapshot(state)
    return data


@pytest.mark.parametrize("name", NAMES)
@given(a=streams, b=streams)
def test_snapshot_plus_tail_equals_full_fold(name: str, a: list[Event], b: list[Event]) -> None:
    mod = PROJECTIONS[name]
    restored = mod.restore(snap(name, fold(name, a)))
    assert snap(name, fold(name, b, start=len(a) + 1, state=restored)) == snap(
        name, fold(name, a + b)
    )


@pytest.mark.parametrize("name", NAMES)
@given(a=streams, b=streams)
def test_split_replay_equals_one_pass(name: str, a: list[Event], b: list[Event]) -> None:
    first = fold(name, a)
    assert snap(name, fold(name, b, start=len(a) + 1, state=first)) == snap(name, fold(name, a + b))


@pytest.mark.parametrize("name", NAMES)
@given(evs=streams)
def test_two_rebuilds_give_identical_bytes(name: str, evs: list[Event]) -> None:
    assert snap(name, fold(name, evs)) == snap(name, fold(name, evs))


@pytest.mark.parametrize("name", NAMES)
@given(evs=streams)
def test_restore_of_snapshot_round_trips(name: str, evs: list[Event]) -> None:
    s = snap(name, fold(name, evs))
    assert snap(name, PROJECTIONS[name].restore(s)) == s


@pytest.mark.parametrize("name", NAMES)
@given(evs=streams, extra=streams)
def test_ignored_payloads_leave_state_unchanged(
    name: str, evs: list[Event], extra: list[Event]
) -> None:
    ignored = [e for e in extra if type(e).__struct_config__.tag not in ROUTES[name]]
    before = fold(name, evs)
    before_bytes = snap(name, before)
    after = fold(name, ignored, start=len(evs) + 1, state=PROJECTIONS[name].restore(before_bytes))
    after.seq = before.seq  # type: ignore[attr-defined]
    assert snap(name, after) == before_bytes


@given(a=streams, b=streams)
def test_the_routed_fold_equals_evolving_every_record(a: list[Event], b: list[Event]) -> None:
    routed = registry_fold(as_records(a + b), {n: PROJECTIONS[n].initial() for n in NAMES})
    for n in NAMES:
        assert snap(n, routed[n]) == snap(n, fold(n, a + b))
    # and from snapshots taken at different points
    states = {n: PROJECTIONS[n].restore(snap(n, fold(n, a[: i + 1]))) for i, n in enumerate(NAMES)}
    resumed = registry_fold(as_records(a + b), states)
    for n in NAMES:
        assert snap(n, resumed[n]) == snap(n, fold(n, a + b))


@given(evs=streams)
def test_graph_weights_stay_in_bounds_and_edges_join_existing_nodes(evs: list[Event]) -> None:
    g = fold("graph", evs)
    for src, targets in g.out.items():  # type: ignore[attr-defined]
        assert src in g.nodes  # type: ignore[attr-defined]
        for dst, e in targets.items():
            assert dst in g.nodes and dst != src  # type: ignore[attr-defined]
            assert math.isfinite(e.weight) and -1.0 <= e.weight <= 1.0
    assert all(-1.0 <= w <= 1.0 for w in g.stop.values())  # type: ignore[attr-defined]


@given(evs=streams)
def test_graph_file_entries_list_existing_chunks(evs: list[Event]) -> None:
    g = fold("graph", evs)
    for path, entry in g.files.items():  # type: ignore[attr-defined]
        for nid in entry.chunks:
            if nid in g.nodes:  # type: ignore[attr-defined]
                assert g.nodes[nid].path == path  # type: ignore[attr-defined]


@given(evs=streams)
def test_vectors_rows_follow_the_recorded_embedder(evs: list[Event]) -> None:
    v = fold("vectors", evs)
    assert all(ref.row >= 0 for ref in v.rows.values())  # type: ignore[attr-defined]
    if not v.embedder_id:  # type: ignore[attr-defined]
        assert v.rows == {}  # type: ignore[attr-defined]
