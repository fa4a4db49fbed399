"""One conformance suite for every EventLog: the in-memory reference log, the
segment log on disk and the shared log on PostgreSQL, plus a state machine that
appends, reads, crashes mid-write and recovers, checked against a plain list model."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ocb_events.clock import TickClock
from ocb_events.errors import LogConflict
from ocb_events.frames import MAGIC
from ocb_events.log import SegmentLog, frame_records, verify_log
from ocb_events.protocol import EventLog
from ocb_events.schema import ConfigChanged, Event, Record
from tests.ocb_events.support import (
    LogMaker,
    ScriptedClock,
    append_all,
    config_events,
    seg_files,
    snapshot,
)
from tests.strategies import actors, any_event, event_batches, event_lists

fixture_examples = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(params=["memory", "segment", "postgres"])
def maker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogMaker]:
    made = LogMaker(request.param, tmp_path)
    if request.param == "postgres":  # a real server (tests.pg_server), a schema per log
        made.pg = request.getfixturevalue("pg_server")
    try:
        yield made
    finally:
        made.close_all()


def _state(log: EventLog) -> tuple[int, int, list[Record]]:
    return log.last_seq, log.last_ts, list(log.read())


# ------------------------------------------------------------------ appending


@fixture_examples
@given(batches=st.lists(event_lists, max_size=6), actor=actors)
def test_append_assigns_gap_free_seqs_from_one(
    maker: LogMaker, batches: list[list[Event]], actor: str
) -> None:
    log = maker.new()
    recs: list[Record] = []
    for batch in batches:
        got = log.append(batch, actor=actor)
        assert [r.seq for r in got] == list(range(len(recs) + 1, len(recs) + len(batch) + 1))
        assert [r.event for r in got] == batch
        assert all(r.actor == actor for r in got)
        assert len({r.ts for r in got}) <= 1, "one batch, one timestamp"
        recs.extend(got)
        assert log.last_seq == len(recs)
    assert list(log.read()) == recs
    assert log.last_ts == (recs[-1].ts if recs else 0)
    maker.discard(log)


def test_empty_log(maker: LogMaker) -> None:
    log = maker.new()
    assert (log.last_seq, log.last_ts) == (0, 0)
    assert list(log.read()) == []
    assert list(log.read(1, 10)) == []


def test_empty_append_changes_nothing(maker: LogMaker) -> None:
    log = maker.new()
    first = log.append(config_events(2), actor="t")
    assert log.append([], actor="t") == []
    assert log.append([], actor="t", expected_seq=2) == []
    assert _state(log) == (2, first[-1].ts, first)


def test_ts_never_decreases_when_the_clock_goes_backwards(maker: LogMaker) -> None:
    clock = ScriptedClock()
    log = maker.new(clock)
    stamps = []
    for now in [500, 100, 900, 900, 20, 1_000]:
        clock.now = now
        stamps.append(log.append(config_events(2), actor="t")[0].ts)
    assert stamps == [500, 500, 900, 900, 900, 1_000]
    assert [r.ts for r in log.read()] == [ts for ts in stamps for _ in range(2)]
    assert log.last_ts == 1_000


def test_ts_follows_the_clock_when_it_moves_forward(maker: LogMaker) -> None:
    log = maker.new(TickClock(start_ns=10, step_ns=5))
    assert [log.append(config_events(1), actor="t")[0].ts for _ in range(3)] == [10, 15, 20]


# ------------------------------------------------------------------ reading


@fixture_examples
@given(
    sizes=st.lists(st.integers(1, 4), max_size=8),
    ranges=st.lists(
        st.tuples(st.integers(-3, 30), st.none() | st.integers(-3, 30)), min_size=1, max_size=10
    ),
)
def test_read_returns_exactly_the_requested_range(
    maker: LogMaker, sizes: list[int], ranges: list[tuple[int, int | None]]
) -> None:
    log = maker.new()
    recs = append_all(log, [config_events(n, f"b{i}-") for i, n in enumerate(sizes)])
    for lo, hi in ranges:
        want = [r for r in recs if lo <= r.seq and (hi is None or r.seq <= hi)]
        assert list(log.read(lo, hi)) == want, (lo, hi)
    assert list(log.read()) == recs
    maker.discard(log)


def test_read_stops_at_the_end_known_at_the_call(maker: LogMaker) -> None:
    log = maker.new()
    before = log.append(config_events(3), actor="t")
    pending = log.read()
    log.append(config_events(2), actor="t")
    assert list(pending) == before


def test_read_across_many_records(maker: LogMaker) -> None:
    log = maker.new()
    recs = append_all(log, [config_events(i % 4 + 1, f"b{i}-") for i in range(40)])
    assert list(log.read()) == recs
    assert list(log.read(37, 61)) == recs[36:61]
    assert [r.seq for r in log.read(len(recs))] == [len(recs)]


# ------------------------------------------------------------------ expectations


@pytest.mark.parametrize("expected", [-1, 0, 1, 2, 4, 100])
def test_stale_expected_seq_raises_and_changes_nothing(maker: LogMaker, expected: int) -> None:
    log = maker.new()
    log.append(config_events(3), actor="t")
    before = _state(log)
    files = snapshot(log.directory) if isinstance(log, SegmentLog) else {}
    for batch in (config_events(2), []):
        with pytest.raises(LogConflict) as info:
            log.append(batch, actor="t", expected_seq=expected)
        assert (info.value.expected_seq, info.value.last_seq) == (expected, 3)
        assert info.value.hint
    assert _state(log) == before
    if isinstance(log, SegmentLog):
        assert snapshot(log.directory) == files
    assert [r.seq for r in log.append(config_events(1), actor="t", expected_seq=3)] == [4]


def test_expected_seq_on_an_empty_log(maker: LogMaker) -> None:
    log = maker.new()
    with pytest.raises(LogConflict):
        log.append(config_events(1), actor="t", expected_seq=1)
    assert log.append(config_events(1), actor="t", expected_seq=0)[0].seq == 1


# ------------------------------------------------------------------ group commit


def test_group_commits_every_append_inside(maker: LogMaker) -> None:
    log = maker.new()
    with log.group():
        a = log.append(config_events(2, "a"), actor="t")
        with log.group():
            b = log.append(config_events(3, "b"), actor="t", expected_seq=2)
        assert list(log.read()) == a + b
        c = log.append(config_events(1, "c"), actor="t")
    assert _state(log)[2] == a + b + c
    assert log.last_seq == 6
    if maker.durable:
        log = maker.reopen(log)
        assert list(log.read()) == a + b + c


def test_an_error_inside_a_group_keeps_earlier_appends(maker: LogMaker) -> None:
    log = maker.new()
    with pytest.raises(LogConflict), log.group():
        a = log.append(config_events(2), actor="t")
        log.append(config_events(1), actor="t", expected_seq=0)
    assert list(log.read()) == a
    assert log.append(config_events(1), actor="t")[0].seq == 3
    if maker.durable:
        log = maker.reopen(log)
        assert [r.seq for r in log.read()] == [1, 2, 3]


# ------------------------------------------------------------------ reopening


@pytest.mark.parametrize("maker", ["segment"], indirect=True)  # a memory log has no reopen
def test_reopen_gives_the_same_records(maker: LogMaker) -> None:
    clock = ScriptedClock(5_000)
    log = maker.new(clock)
    recs = append_all(log, [config_events(i % 3 + 1, f"b{i}-") for i in range(25)])
    log = maker.reopen(log, clock)
    assert log.recovery is None
    assert _state(log) == (len(recs), 5_000, recs)
    clock.now = 10  # the clock went backwards across the restart
    more = log.append(config_events(2), actor="t")
    assert [r.seq for r in more] == [len(recs) + 1, len(recs) + 2]
    assert more[0].ts == 5_000
    log = maker.reopen(log, clock)
    assert list(log.read()) == recs + more


# ------------------------------------------------------------------ state machine


MACHINE_SEGMENT = 2048
"""Large enough that a crash often tears the current segment, small enough to roll."""


class LogMachine(RuleBasedStateMachine):
    """Appends, reads, rejects stale appends and (segment log only) crashes mid-write,
    checked against ``model``: the records of every acknowledged append."""

    def __init__(self, maker: LogMaker) -> None:
        super().__init__()
        self.maker = maker
        self.clock = ScriptedClock(1_000)
        self.log: EventLog = maker.new(self.clock, segment_bytes=MACHINE_SEGMENT)
        self.model: list[Record] = []
        self.tails: list[bytes] = []  # every TAIL checkpoint the writer has written

    # -------------------------------------------------------------- helpers

    def _expect(self, batch: list[Event], actor: str) -> list[Record]:
        ts = max(self.clock.now, self.model[-1].ts if self.model else 0)
        first = len(self.model) + 1
        return [Record(seq=first + i, ts=ts, actor=actor, event=e) for i, e in enumerate(batch)]

    def _remember_tail(self) -> None:
        if isinstance(self.log, SegmentLog):
            tail = self.log.directory / "TAIL"
            if tail.exists():
                self.tails.append(tail.read_bytes())

    def _check_all(self) -> None:
        assert list(self.log.read()) == self.model

    # -------------------------------------------------------------- rules

    @rule(actor=actors, expect=st.booleans())
    def append_nothing(self, actor: str, expect: bool) -> None:
        expected_seq = len(self.model) if expect else None
        assert self.log.append([], actor=actor, expected_seq=expected_seq) == []

    @rule(batch=event_batches, actor=actors, now=st.integers(0, 5_000), expect=st.booleans())
    def append(self, batch: list[Event], actor: str, now: int, expect: bool) -> None:
        self.clock.now = now
        want = self._expect(batch, actor)
        expected_seq = len(self.model) if expect else None
        got = self.log.append(batch, actor=actor, expected_seq=expected_seq)
        assert got == want
        self.model.extend(got)
        self._remember_tail()

    @rule(batches=st.lists(event_lists, min_size=1, max_size=3), now=st.integers(0, 5_000))
    def append_in_group(self, batches: list[list[Event]], now: int) -> None:
        self.clock.now = now
        with self.log.group():
            for batch in batches:
                want = self._expect(batch, "group")
                assert self.log.append(batch, actor="group") == want
                self.model.extend(want)
        self._remember_tail()

    @rule(offset=st.integers(-3, 3).filter(bool), batch=event_lists)
    def stale_append(self, offset: int, batch: list[Event]) -> None:
        with pytest.raises(LogConflict):
            self.log.append(batch, actor="stale", expected_seq=len(self.model) + offset)

    @rule(lo=st.integers(-2, 60), hi=st.none() | st.integers(-2, 60))
    def read_range(self, lo: int, hi: int | None) -> None:
        want = [r for r in self.model if r.seq >= lo and (hi is None or r.seq <= hi)]
        assert list(self.log.read(lo, hi)) == want

    @precondition(lambda self: self.maker.durable)
    @rule()
    def reopen(self) -> None:
        self.log = self.maker.reopen(self.log, self.clock)
        assert self.log.recovery is None
        self._check_all()

    @precondition(lambda self: self.maker.durable)
    @rule()
    def read_beside_the_writer(self) -> None:
        assert isinstance(self.log, SegmentLog)
        with SegmentLog(self.log.directory, writer=False) as reader:
            assert reader.recovery is None
            assert list(reader.read()) == self.model

    @precondition(lambda self: self.maker.durable)
    @rule(data=st.data())
    def crash_mid_write(self, data: st.DataObject) -> None:
        """Kill the writer while it writes the next batch: the unacknowledged bytes
        (a prefix of that batch's frames, maybe followed by junk) stay on disk."""
        log = self.log
        assert isinstance(log, SegmentLog)
        chain = log.chain_of(log.last_seq)
        assert chain is not None
        log.close()
        directory = log.directory
        torn = self._torn_bytes(data, chain)
        segs = seg_files(directory)
        header_torn = False
        if segs and segs[-1].stat().st_size < log.segment_bytes:
            target, header = segs[-1], b""
            end = target.stat().st_size
        else:  # the writer was starting a new segment
            first = len(self.model) + 1
            target = directory / f"{first:020d}.seg"
            full = MAGIC + first.to_bytes(8, "little") + chain
            header = full[: data.draw(st.just(len(full)) | st.sampled_from([0, 5, 15, 30]))]
            end = len(header)
            header_torn = len(header) < len(full)
            if header_torn:
                torn = b""  # the kill came before the header was complete
        with open(target, "ab") as fh:
            fh.write(header + torn)
        if self.tails and data.draw(st.booleans()):
            # the checkpoint of an earlier append: TAIL is written after the data
            (directory / "TAIL").write_bytes(data.draw(st.sampled_from(self.tails)))
        self.log = self.maker.reopen(log, self.clock)
        self._check_recovery(target, end, torn, header_torn)
        self._check_all()
        reports = verify_log(directory)
        assert (reports[-1].last_seq if reports else 0) == len(self.model)
        self._remember_tail()

    def _torn_bytes(self, data: st.DataObject, chain: bytes) -> bytes:
        """What a killed writer leaves: a prefix of the batch it was writing, or (a
        file extended without its data) zeros where the next batch would start."""
        batch = data.draw(st.lists(any_event, min_size=1, max_size=3))
        recs = self._expect(batch, "lost")
        frames = b"".join(frame_records(recs, chain)[0])
        if data.draw(st.booleans()):
            return b"\x00" * data.draw(st.integers(1, 64))
        return frames[: data.draw(st.integers(1, len(frames) - 1))]

    def _check_recovery(self, target: Path, end: int, torn: bytes, header_torn: bool) -> None:
        assert isinstance(self.log, SegmentLog)
        rec = self.log.recovery
        if header_torn:
            assert rec is None
            assert not target.exists(), "a headerless segment is removed"
            return
        assert rec is not None
        assert rec.segment == target.name
        assert (rec.offset, rec.dropped_bytes) == (end, len(torn))
        assert rec.last_seq == len(self.model)
        assert rec.repaired
        assert target.stat().st_size == end

    # -------------------------------------------------------------- invariants

    @invariant()
    def ends_match_the_model(self) -> None:
        assert self.log.last_seq == len(self.model)
        assert self.log.last_ts == (self.model[-1].ts if self.model else 0)

    def teardown(self) -> None:
        self._check_all()
        self.maker.discard(self.log)


def test_log_state_machine(maker: LogMaker) -> None:
    run_state_machine_as_test(lambda: LogMachine(maker), settings=settings(stateful_step_count=25))


def test_crash_rule_reaches_a_new_segment(tmp_path: Path) -> None:
    """A direct run of the crash rule after a rollover: the torn batch was being
    written to a fresh segment (full header, partial frame)."""
    maker = LogMaker("segment", tmp_path)
    try:
        log = maker.new(TickClock())
        recs = append_all(log, [config_events(3, f"b{i}-") for i in range(8)])
        assert len(seg_files(log.directory)) > 1
        log.close()
        last = seg_files(log.directory)[-1]
        assert last.stat().st_size >= maker.segment_bytes
        first = len(recs) + 1
        lost = Record(seq=first, ts=1, actor="lost", event=ConfigChanged(key="x", value=1))
        chain = log.chain_of(log.last_seq)
        assert chain is not None
        frame = frame_records([lost], chain)[0][0]
        target = log.directory / f"{first:020d}.seg"
        cut = random.Random(7).randrange(1, len(frame))
        target.write_bytes(MAGIC + first.to_bytes(8, "little") + chain + frame[:cut])
        log = maker.reopen(log)
        assert log.recovery is not None
        assert (log.recovery.segment, log.recovery.offset) == (target.name, 32)
        assert list(log.read()) == recs
        assert log.append(config_events(1), actor="t")[0].seq == first
        assert [r.seq for r in maker.reopen(log).read()] == list(range(1, first + 1))
    finally:
        maker.close_all()
