"""Whole rebuilds, in one process and in two (the graph folded by a second interpreter
and restored from its snapshot bytes), against the record-by-record fold, byte for
byte; and what happens when the second process cannot help."""

from __future__ import annotations

import gc
import io
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ocb_events.log import SegmentLog
from ocb_events.memory import MemoryLog
from ocb_events.protocol import EventLog
from ocb_events.schema import (
    STOP,
    EdgeDeltas,
    EdgesUpdated,
    Event,
    NodeValue,
)
from projections import PROJECTIONS, fold
from replay import rebuild, split as split_process
from replay.folding import fold_fast, read_for
from tests.ocb_events.golden_log import GOLDEN
from tests.pg_server import PgServer
from tests.projections.streams import streams
from tests.replay.folds import NAMES, append, chunk_graph, clock, reference, snapshots

HERE = [n for n in NAMES if n != "graph"]


NODES = [f"n.md::{i}" for i in range(6)]


def _updates(n: int) -> list[Event]:
    return [
        EdgesUpdated(
            updates=(
                EdgeDeltas(
                    source=NODES[i % 6], targets=(STOP, NODES[(i + 1) % 6]), deltas=(0.3, -0.2)
                ),
            ),
            rule="pg",
            cause_seq=1,
            baselines=(NodeValue(node=NODES[i % 6], value=0.01 * i),),
        )
        for i in range(n)
    ]


# ------------------------------------------------------------------ two processes


def test_rebuilds_of_the_golden_log_in_one_and_two_processes_equal_the_record_fold() -> None:
    with SegmentLog(GOLDEN, writer=False) as log:
        want = reference(log)
        assert snapshots(rebuild(log, split=False)) == want
        seen: list[int] = []
        failed: list[str] = []
        got = rebuild(
            log, split=True, progress=lambda seq, end: seen.append(seq), warn=failed.append
        )
        assert not failed  # the second process folded the graph
        assert snapshots(got) == want
        assert seen == sorted(seen) and seen[-1] == log.last_seq
        assert snapshots(rebuild(log, ["graph", "traces"], to_seq=10, split=True)) == reference(
            log, ["graph", "traces"], 10
        )


class _Kept(io.BytesIO):
    """A sink that keeps what was written once closed."""

    def close(self) -> None:
        self.kept = self.getvalue()
        super().close()


def _handed_back(log: EventLog, end: int, *, payloads: bool = False) -> dict[str, Any]:
    """This process's states folded as a split rebuild folds them, the graph restored
    from what the second process (run here) hands back for the records forwarded
    (decoded, or a segment log's as the payloads read)."""
    sink = _Kept()
    forward = split_process.Forward(sink, split_process.Job(["graph"], end))
    if payloads:
        records = read_for(log, HERE, 1, end, forward.payloads)
    else:
        records = forward.records(read_for(log, NAMES, 1, end))
    states = fold_fast(records, {n: PROJECTIONS[n].initial() for n in HERE})
    forward.close()
    assert forward.error is None
    got = msgspec.msgpack.decode(
        split_process.main(io.BytesIO(sink.kept)), type=split_process.Handoff
    )
    states["graph"] = PROJECTIONS["graph"].restore(got.snapshots["graph"])
    return states


@settings(max_examples=40)
@given(a=streams, b=streams, times=st.integers(0, 30))
def test_the_graph_handed_back_and_restored_folds_as_this_process_would(
    a: list[Event], b: list[Event], times: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with SegmentLog(Path(tmp) / "log", clock=clock(), durability="none") as log:
            append(log, [chunk_graph(NODES), a, _updates(times), b, _updates(times)])
            end = log.last_seq
            assert snapshots(_handed_back(log, end, payloads=True)) == reference(log)
            states = _handed_back(log, end)
            assert snapshots(states) == reference(log)
            # the restored graph goes on folding as a folded one
            append(log, [_updates(3), a])
            fold_fast(read_for(log, NAMES, end + 1, log.last_seq), states)
            assert snapshots(states) == reference(log)


@given(a=streams, b=streams)
def test_records_of_every_form_forwarded_fold_alike(a: list[Event], b: list[Event]) -> None:
    memory = MemoryLog(clock=clock())  # decoded weight updates
    append(memory, [chunk_graph(NODES), a, _updates(4), b])
    assert snapshots(_handed_back(memory, memory.last_seq)) == reference(memory)
    with SegmentLog(GOLDEN, writer=False) as log:  # weight updates in msgpack, left raw
        assert snapshots(_handed_back(log, log.last_seq)) == reference(log)


@settings(max_examples=30)
@given(how=st.lists(st.booleans(), min_size=1))
def test_records_and_payloads_forwarded_in_any_mix_fold_in_log_order(how: list[bool]) -> None:
    with SegmentLog(GOLDEN, writer=False) as log:
        end = log.last_seq
        sink = _Kept()
        forward = split_process.Forward(sink, split_process.Job(["graph"], end))
        full = read_for(log, NAMES, 1, end)  # the same records, decoded for every fold

        def mixed(decode: Any) -> Any:
            def run(views: Any, offsets: Any, segment: str) -> Any:
                for view, rec in zip(views, decode(views, offsets, segment), strict=True):
                    whole = next(full)
                    assert whole.seq == rec.seq
                    if forward.wants(type(whole.event)):
                        if how[rec.seq % len(how)]:
                            forward.send_payload(view)
                        else:
                            forward.send(whole)
                    yield rec

            return run

        for _ in read_for(log, HERE, 1, end, mixed):
            pass
        forward.close()
        want = reference(log, ["graph"])["graph"]
    got = msgspec.msgpack.decode(
        split_process.main(io.BytesIO(sink.kept)), type=split_process.Handoff
    )
    assert got.records == forward.count > 0
    assert got.snapshots["graph"] == want


def test_a_frame_of_payloads_that_does_not_add_up_is_an_error() -> None:
    with SegmentLog(GOLDEN, writer=False) as log:
        sink = _Kept()
        forward = split_process.Forward(sink, split_process.Job(["graph"], log.last_seq))
        for _ in read_for(log, HERE, 1, log.last_seq, forward.payloads):
            pass
        forward.close()
    data = bytearray(sink.kept)
    job = 4 + struct.unpack_from("<I", data)[0]
    assert data[job + 4] == 0, "a frame of payloads follows the job"
    data[job + 9] ^= 0x01  # the first payload's length
    with pytest.raises(ValueError, match="does not add up"):
        split_process.main(io.BytesIO(bytes(data)))


def test_a_stream_of_records_cut_short_is_an_error_not_a_state() -> None:
    with SegmentLog(GOLDEN, writer=False) as log:
        sink = _Kept()
        forward = split_process.Forward(sink, split_process.Job(["graph"], log.last_seq))
        for _ in forward.records(read_for(log, NAMES, 1, log.last_seq)):
            pass
        forward.close()
    with pytest.raises(EOFError):
        split_process.main(io.BytesIO(sink.kept[:-4]))  # without its last, empty frame
    with pytest.raises(EOFError):
        split_process.main(io.BytesIO(sink.kept[:-10]))


def test_every_state_of_the_golden_log_restored_folds_on_as_the_folded_one() -> None:
    with SegmentLog(GOLDEN, writer=False) as log:
        middle = log.last_seq // 2
        folded = fold(log.read(1, middle, light=True), {n: PROJECTIONS[n].initial() for n in NAMES})
        restored = {n: PROJECTIONS[n].restore(body) for n, body in snapshots(folded).items()}
        assert snapshots(restored) == snapshots(folded)
        for states in (folded, restored):
            fold(log.read(middle + 1, log.last_seq, light=True), states)
        assert snapshots(restored) == snapshots(folded) == reference(log)


def _answering(change: str) -> str:
    """A second process that folds what it is sent and answers with ``change`` made to
    its handoff ``h``."""
    return (
        "import sys, msgspec; from replay.split import Handoff, main; "
        "h = msgspec.msgpack.decode(main(sys.stdin.buffer), type=Handoff); "
        f"{change}; sys.stdout.buffer.write(msgspec.msgpack.encode(h))"
    )


def _failing(monkeypatch: Any, code: str) -> None:
    monkeypatch.setattr(split_process, "COMMAND", ["-c", code])


def test_a_second_process_that_crashes_leaves_the_graph_to_this_one(
    tmp_path: Path, monkeypatch: Any
) -> None:
    with SegmentLog(tmp_path / "log", clock=clock(), durability="none") as log:
        append(log, [chunk_graph(NODES), _updates(20)])
        want = reference(log)
        cases = [
            ("import sys; sys.stderr.write('boom: it broke\\n'); sys.exit(1)", "boom: it broke"),
            ("import sys; sys.stdout.write('not msgpack')", "could not be read"),
            ("import sys; sys.stdin.close(); sys.exit(3)", "status 3"),
            (  # an answer for the graph without the records folded: never taken
                "import sys; sys.stdin.buffer.read(); "
                "sys.stdout.buffer.write(b'\\x92\\x81\\xa5graph\\xc4\\x00\\x00')",
                "folded 0 records of",
            ),
            (_answering("h.snapshots = {'kg': h.snapshots['graph']}"), "other projections"),
            (_answering("h.snapshots['graph'] = b'\\xc1'"), "snapshots could not be read"),
        ]
        for code, why in cases:
            _failing(monkeypatch, code)
            failed: list[str] = []
            assert snapshots(rebuild(log, split=True, warn=failed.append)) == want
            assert len(failed) == 1 and why in failed[0] and "\n" not in failed[0]


def test_the_second_process_runs_the_code_of_this_one(tmp_path: Path, monkeypatch: Any) -> None:
    other = tmp_path / "elsewhere" / "replay"  # a package of the same name where it starts
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    monkeypatch.chdir(other.parent)
    _failing(monkeypatch, "import sys, replay; sys.exit(replay.__file__)")
    with SegmentLog(tmp_path / "log", clock=clock(), durability="none") as log:
        append(log, [chunk_graph(NODES)])
        failed: list[str] = []
        rebuild(log, split=True, warn=failed.append)
    assert len(failed) == 1 and failed[0].count(str(Path(split_process.__file__).parent)) == 1


def test_without_an_interpreter_to_start_everything_is_folded_here(
    tmp_path: Path, monkeypatch: Any
) -> None:
    with SegmentLog(tmp_path / "log", clock=clock(), durability="none") as log:
        append(log, [chunk_graph(NODES), _updates(5)])
        monkeypatch.setattr(sys, "executable", "")
        failed: list[str] = []
        assert snapshots(rebuild(log, split=True, warn=failed.append)) == reference(log)
        assert not failed


def test_a_log_in_memory_is_rebuilt_in_two_processes_alike() -> None:
    log = MemoryLog(clock=clock())
    append(log, [chunk_graph(NODES), _updates(5)])
    failed: list[str] = []
    assert snapshots(rebuild(log, split=True, warn=failed.append)) == reference(log)
    assert not failed


def test_a_postgresql_log_is_rebuilt_in_two_processes(pg_server: PgServer) -> None:
    from ocb_events.pg.log import PostgresLog

    with PostgresLog(pg_server.fresh_url(), clock=clock()) as log:
        append(log, [chunk_graph(NODES), _updates(20), chunk_graph(NODES), _updates(7)])
        failed: list[str] = []
        assert snapshots(rebuild(log, split=True, warn=failed.append)) == reference(log)
        assert not failed


def test_a_rebuild_that_fails_here_stops_the_second_process(
    tmp_path: Path, monkeypatch: Any
) -> None:
    started: list[Any] = []
    start = split_process.start

    def keep() -> Any:
        started.append(start())
        return started[-1]

    def interrupt(seq: int, end: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(split_process, "start", keep)
    _failing(monkeypatch, "import time; time.sleep(60)")
    with SegmentLog(tmp_path / "log", clock=clock(), durability="none") as log:
        append(log, [chunk_graph(NODES), _updates(5)])
        with pytest.raises(KeyboardInterrupt):
            rebuild(log, split=True, progress=interrupt)
    assert len(started) == 1 and started[0].returncode is not None  # killed and waited for


@pytest.mark.parametrize("enabled", [True, False])
def test_a_rebuild_leaves_the_cycle_collector_as_it_found_it(enabled: bool) -> None:
    def stop(seq: int, end: int) -> None:
        assert not gc.isenabled()  # off while the records are folded
        if seq > 5:
            raise KeyboardInterrupt

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with SegmentLog(GOLDEN, writer=False) as log:
            assert snapshots(rebuild(log, split=False)) == reference(log)
            assert gc.isenabled() is enabled
            with pytest.raises(KeyboardInterrupt):
                rebuild(log, split=False, progress=stop)
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
