"""Time travel: points in history, as-of states, snapshots and verification."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.log import SegmentLog
from ocb_events.memory import MemoryLog
from ocb_events.schema import Event
from replay import PROJECTIONS, SnapshotStore, load_states, resolve_point, seq_at_time
from replay.timetravel import iso
from replay.verify import verify_live, verify_snapshots
from tests.projections.streams import streams

NAMES = sorted(PROJECTIONS)


def fold_first(log: SegmentLog, n: int) -> dict[str, bytes]:
    """Every projection folded, record by record, over the first ``n`` records."""
    states = {k: PROJECTIONS[k].initial() for k in NAMES}
    for rec in log.read(1, n):
        for k in NAMES:
            states[k] = PROJECTIONS[k].evolve(states[k], rec)
    return {k: PROJECTIONS[k].snapshot(v) for k, v in states.items()}


def snaps(states: dict[str, object]) -> dict[str, bytes]:
    return {k: PROJECTIONS[k].snapshot(v) for k, v in states.items()}


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=25)
@given(evs=streams.filter(lambda e: len(e) > 0), data=st.data())
def test_as_of_n_equals_the_fold_of_the_first_n_events_with_or_without_snapshots(
    evs: list[Event], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = SegmentLog(Path(tmp) / "log", clock=TickClock(), segment_bytes=2048)
        for ev in evs:
            log.append([ev], actor="t")
        store = SnapshotStore(Path(tmp) / "snaps")
        bare = SnapshotStore(Path(tmp) / "none")
        for at in sorted(set(data.draw(st.lists(st.integers(1, len(evs)), max_size=4)))):
            for name, state in load_states(log, bare, NAMES, to_seq=at).items():
                chain = log.chain_of(at)
                assert chain is not None
                body = PROJECTIONS[name].snapshot(state)
                store.save(name, at, body, chain=chain, checkpoint_every=3)
        n = data.draw(st.integers(1, len(evs)))
        expected = fold_first(log, n)
        assert snaps(load_states(log, store, NAMES, to_seq=n)) == expected
        assert snaps(load_states(log, bare, NAMES, to_seq=n)) == expected
        assert all(f.ok for f in verify_snapshots(log, store))
        assert all(f.ok for f in verify_live(log, store))
        log.close()


@given(st.lists(st.integers(0, 5), min_size=1, max_size=30), st.data())
def test_a_time_resolves_to_the_last_record_at_or_before_it(
    steps: list[int], data: st.DataObject
) -> None:
    clock = TickClock(start_ns=1_000, step_ns=0)
    log = MemoryLog(clock=clock)
    for step in steps:
        clock.advance(step)
        log.append([Event()], actor="t")  # type: ignore[list-item]
    t = data.draw(st.integers(0, clock.now_ns + 5))
    expected = max((r.seq for r in log.read() if r.ts <= t), default=0)
    assert seq_at_time(log, t) == expected


def test_points_outside_the_history_or_malformed_are_refused_with_the_valid_range() -> None:
    log = MemoryLog(clock=TickClock(start_ns=1_767_225_600 * 10**9, step_ns=10**9))
    with pytest.raises(InputError, match="no history"):
        resolve_point(log, "1")
    log.append([Event()] * 5, actor="t")  # type: ignore[list-item]
    log.append([Event()] * 5, actor="t")  # type: ignore[list-item]
    assert resolve_point(log, "7") == 7
    assert resolve_point(log, iso(log.ts_of(1))) == 5  # one append, one ts
    assert resolve_point(log, "2026-01-01T00:00:01+00:00") == 10
    for bad in ("0", "11", "2025-12-31T23:59:59Z", "2026-01-02T00:00"):
        with pytest.raises(InputError, match="outside the history") as exc:
            resolve_point(log, bad)
        assert exc.value.hint == (
            "valid: seq 1 to 10, or a time from 2026-01-01T00:00:00Z to 2026-01-01T00:00:01Z"
        )
    with pytest.raises(InputError, match="neither a seq nor an ISO time"):
        resolve_point(log, "last tuesday")


def test_the_range_a_refusal_names_is_inside_the_history() -> None:
    """The first time it names resolves even when the first record is mid-second."""
    log = MemoryLog(clock=TickClock(start_ns=1_767_225_600 * 10**9 + 600_000_000, step_ns=10**9))
    for _ in range(3):
        log.append([Event()], actor="t")  # type: ignore[list-item]
    with pytest.raises(InputError) as exc:
        resolve_point(log, "2025-01-01T00:00")
    first, last = exc.value.hint.split("a time from ")[1].split(" to ")
    assert first == "2026-01-01T00:00:01Z" and last == "2026-01-01T00:00:02Z"
    assert resolve_point(log, first) == 1 and resolve_point(log, last) == 2
