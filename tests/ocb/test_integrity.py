"""A brain never loses or rewrites history silently: damage anywhere stops every command
(naming the seq), lost records are never started over, snapshots of another history
are never loaded, and `ocb verify --repair` keeps every intact record."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb_events.clock import TickClock
from ocb_events.log import SegmentLog
from ocb_events.schema import ConfigChanged, LogRepaired, QueryTraced, RecordLost
from replay import PROJECTIONS, rebuild

QUESTION = "how do I roll back a bad deploy"
runner = CliRunner()


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def brain(workspace: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A brain of the example workspace with some history and a snapshot after every
    command."""
    path = tmp_path / "brain"
    with Brain.create(path, clock=TickClock()) as b:
        b.sync(workspace)
        b.set_config("storage.snapshot_tail", 1)
        for i in range(6):
            answer = b.query(QUESTION, chat_id=f"c{i}")
            b.learn(1.0, trace_id=answer.trace_id)
    return workspace, path


def files_of(path: Path) -> dict[str, bytes]:
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and "cache" not in p.parts and p.name != "LOCK"
    }


def one_error(err: str, pattern: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert re.match(pattern, lines[0]), lines[0]
    assert lines[1].startswith("hint: ") and "verify --repair" in lines[1]


def damage_record(path: Path, seq: int) -> tuple[str, int]:
    with SegmentLog(path / "log", writer=False) as log:
        seg = next(s for s in reversed(log._segments) if s.first_seq <= seq)
        off = log._offsets(seg)[seq - seg.first_seq]
    data = bytearray(seg.path.read_bytes())
    data[off + 70] ^= 0x21
    seg.path.write_bytes(bytes(data))
    return seg.name, off


def commands(ws: Path, path: Path) -> list[list[object]]:
    return [
        ["query", QUESTION, "--brain", path],
        ["recall", "deploy", "--brain", path],
        ["learn", "--brain", path, "--chat-id", "c1", "--outcome", "1", "--again"],
        ["inject", "--brain", path, "--content", "Check the canary", "--type", "TEACHING"],
        ["init", "--workspace", ws, "--brain", path],
        ["snapshot", "--brain", path],
        ["sql", "--brain", path, "SELECT count(*) FROM events"],
        ["retain", "Deploys freeze on Fridays", "--brain", path],
        ["config", "--brain", path, "traversal.max_hops", "4"],
        ["events", "--brain", path],
    ]


def test_damage_in_the_middle_stops_every_command_until_repaired(
    brain: tuple[Path, Path],
) -> None:
    ws, path = brain
    name, off = damage_record(path, 30)
    before = files_of(path)
    for args in commands(ws, path):
        code, _, err = ocb(*args)
        assert code == 1, args
        one_error(err, rf"error: log corrupt at seq 30 \(segment {name}, offset {off}\)")
    assert files_of(path) == before, "nothing appended, snapshotted or repaired"
    code, out, _ = ocb("verify", "--brain", path, "--repair")
    assert code == 0, out
    assert "seqs lost (now tombstones): 30;" in out
    with Brain(path) as b:
        lost = list(b.log.read(30, 30))[0]
        assert isinstance(lost.event, RecordLost)
        last = list(b.log.read(b.log.last_seq))[0]
        assert isinstance(last.event, LogRepaired) and last.event.lost[0].first == 30
        full = rebuild(b.log)
        b.store.load(*PROJECTIONS)
        assert all(
            PROJECTIONS[n].snapshot(full[n]) == PROJECTIONS[n].snapshot(b.state(n))
            for n in PROJECTIONS
        )
    for args in commands(ws, path):
        code, _, err = ocb(*args)
        assert code == 0, (args, err)


def test_doctor_reports_a_damaged_log_with_or_without_repair(brain: tuple[Path, Path]) -> None:
    """Blob regeneration needs the log; on a damaged one ``doctor --repair`` gives the
    same report as ``doctor`` (whose failing check names the log repair)."""
    _, path = brain
    damage_record(path, 30)
    plain = ocb("doctor", "--brain", path)
    assert plain[0] == 1 and plain[1].startswith("FAIL  log integrity: log corrupt at seq 30")
    assert ocb("doctor", "--brain", path, "--repair") == plain


@pytest.mark.parametrize("how", ["truncated", "deleted"])
@pytest.mark.parametrize("tail", ["kept", "deleted"])
def test_a_lost_end_of_the_log_is_refused_never_started_over(
    brain: tuple[Path, Path], how: str, tail: str
) -> None:
    ws, path = brain
    seg = next((path / "log").glob("*.seg"))
    with SegmentLog(path / "log", writer=False) as log:
        held = log.last_seq
    if how == "deleted":
        seg.unlink()
    else:
        seg.write_bytes(seg.read_bytes()[:10])  # shorter than its header
    if tail == "deleted":
        (path / "log" / "TAIL").unlink()  # the snapshots still know
    for args in commands(ws, path)[:3]:
        code, _, err = ocb(*args)
        assert code == 1
        one_error(err, r"error: the log ends at seq 0 but held records up to seq \d+")
    code, out, _ = ocb("doctor", "--brain", path)
    assert code == 1 and "FAIL  log integrity" in out
    code, _, _ = ocb("verify", "--brain", path)
    assert code == 1
    code, out, _ = ocb("verify", "--brain", path, "--repair")
    assert code == 0, out
    code, out, _ = ocb("query", QUESTION, "--brain", path, "--json")
    assert code == 0
    with Brain(path) as b:
        assert json.loads(out)["trace_id"] == f"t{b.log.last_seq}"
        assert b.log.last_seq > held, "the lost seqs stay used: nothing starts over at 1"
        traces = [r for r in b.log.read() if isinstance(r.event, QueryTraced)]
        assert [int(t.event.trace_id[1:]) for t in traces] == [t.seq for t in traces]


def test_snapshots_of_an_abandoned_history_are_never_loaded(
    brain: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, path = brain
    other = tmp_path / "other"
    with Brain.create(other, clock=TickClock(start_ns=7)) as b:
        b.sync(ws)
        for i in range(25):
            b.query(f"what does the on-call engineer do first {i}")
    with SegmentLog(path / "log", writer=False) as log:
        ours = log.last_seq
    shutil.rmtree(path / "log")
    shutil.copytree(other / "log", path / "log")  # "restored from a backup" of another history
    with SegmentLog(path / "log", writer=False) as log:
        assert log.last_seq >= ours, "the snapshots' seqs are all inside the log"
    warnings: list[str] = []
    with Brain(path, warn=warnings.append) as b:
        b.store.load(*PROJECTIONS)
        full = rebuild(b.log)
        for n in PROJECTIONS:
            assert PROJECTIONS[n].snapshot(b.state(n)) == PROJECTIONS[n].snapshot(full[n]), n
    assert any("belongs to another history" in w for w in warnings)
    code, out, _ = ocb("verify", "--brain", path)
    assert code == 0, out


def test_bit_rot_in_the_last_record_is_reported_not_repaired_as_a_torn_write(
    brain: tuple[Path, Path],
) -> None:
    ws, path = brain
    with SegmentLog(path / "log", writer=False) as log:
        last = log.last_seq
    seg = sorted((path / "log").glob("*.seg"))[-1]
    data = bytearray(seg.read_bytes())
    data[-5] ^= 0x08
    seg.write_bytes(bytes(data))
    (path / "log" / "TAIL").unlink()
    before = files_of(path)
    code, _, err = ocb("learn", "--brain", path, "--chat-id", "c2", "--outcome", "-1", "--again")
    assert code == 1
    one_error(err, rf"error: log corrupt at seq {last} .*: checksum mismatch in a complete record")
    assert files_of(path) == before, "the last acknowledged batch is kept for the user to decide"


def test_readers_never_say_they_recovered_anything(brain: tuple[Path, Path]) -> None:
    ws, path = brain
    with SegmentLog(path / "log", writer=False) as log:
        chain = log.chain_of(log.last_seq)
    seg = sorted((path / "log").glob("*.seg"))[-1]
    tail = (path / "log" / "TAIL").read_bytes()
    with SegmentLog(path / "log", clock=TickClock(start_ns=2 * 10**18)) as log:
        log.append([ConfigChanged(key="traversal.max_hops", value=2)] * 2, actor="cli")
    seg.write_bytes(seg.read_bytes()[:-20])  # the writer was killed mid-append
    (path / "log" / "TAIL").write_bytes(tail)
    code, _, err = ocb("events", "--brain", path, "--limit", "1")
    assert (code, err) == (0, "")
    code, _, err = ocb("query", QUESTION, "--brain", path)
    assert code == 0
    assert err.startswith("warning: recovered the log: dropped an unfinished batch")
    with SegmentLog(path / "log", writer=False) as log:
        assert log.chain_of(log.last_seq - 1) == chain, "the query is after the kept history"


def test_an_analytics_store_of_an_abandoned_history_is_rebuilt(
    brain: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, path = brain
    code, out, _ = ocb("sql", "--brain", path, "SELECT count(*) n FROM events", "--json")
    assert code == 0
    other = tmp_path / "other"
    with Brain.create(other, clock=TickClock()) as b:  # same first record, other history
        b.sync(ws)
        for i in range(40):
            b.query(f"who is on call this week {i}")
    shutil.rmtree(path / "log")
    shutil.copytree(other / "log", path / "log")
    shutil.rmtree(path / "snapshots")
    code, out, err = ocb("sql", "--brain", path, "SELECT count(*) n FROM traces", "--json")
    assert code == 0, err
    assert "built from another history" in err
    assert json.loads(out) == [{"n": 40}], "only the traces of the history the log holds"
