"""Time travel through the brain: read-only views of the past, snapshots that are
never trusted blindly, and verification after any sequence of commands."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.upkeep.maintain import maintain
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from replay import PROJECTIONS, rebuild
from replay.verify import verify_live, verify_snapshots
from tests.ocb.support import EXAMPLE

QUESTIONS = ["how do I roll back a bad deploy", "who is on call", "postgres pool size"]
runner = CliRunner()


def snaps(brain: Brain) -> dict[str, bytes]:
    return {n: PROJECTIONS[n].snapshot(brain.state(n)) for n in sorted(PROJECTIONS)}


def test_the_past_answers_as_it_did_then_and_records_nothing(built: Path) -> None:
    with Brain(built, clock=TickClock()) as b:
        before = b.query(QUESTIONS[0], top=5)
        point = b.log.last_seq
        for _ in range(8):
            b.learn(1.0, trace_id=b.query(QUESTIONS[0]).trace_id)
        b.set_config("traversal.max_hops", 1)
        end = b.log.last_seq
    with Brain(built, as_of=point) as past:
        again = past.query(QUESTIONS[0], top=5)
        assert past.store.settings()[0].max_hops == 3  # the config in force then
        assert (again.fired, [h.score for h in again.results]) == (
            before.fired,
            [h.score for h in before.results],
        )
        assert again.trace_id == "" and past.log.last_seq == end
        with pytest.raises(InputError, match="records nothing"):
            past.learn(1.0, trace_id=before.trace_id)
    with Brain(built, writer=False) as now:
        assert now.log.last_seq == end


def test_a_damaged_or_deleted_snapshot_is_ignored_and_rebuilt(built: Path) -> None:
    warnings: list[str] = []
    with Brain(built, clock=TickClock(), snapshot_every=1) as b:
        for q in QUESTIONS:
            b.query(q)
        good = snaps(b)
    newest = sorted((built / "snapshots").glob("graph-*.snap"))[-1]
    data = bytearray(newest.read_bytes())
    data[-10] ^= 0xFF
    newest.write_bytes(bytes(data))
    with Brain(built, writer=False, warn=warnings.append) as b:
        assert snaps(b) == good
        found = verify_snapshots(b.log, b.store.snapshots)
    assert any("is damaged or outdated; ignored and rebuilt" in w for w in warnings)
    bad = [f for f in found if not f.ok]
    assert [f.what for f in bad] == [f"snapshot {newest.name}"]
    shutil.rmtree(built / "snapshots")
    with Brain(built, writer=False) as b:
        assert snaps(b) == good


def test_checkpoints_are_kept_one_per_interval(built: Path) -> None:
    with Brain(built, clock=TickClock()) as b:
        b.set_config("storage.checkpoint_every", 10)
        b.set_config("storage.snapshot_tail", 1)
    for i in range(25):
        with Brain(built, clock=TickClock(start_ns=2 * 10**18 + i)) as b:
            b.query(QUESTIONS[i % 3])
    seqs = sorted(int(p.name[6:26]) for p in (built / "snapshots").glob("graph-*.snap"))
    checkpoints = [s // 10 for s in seqs[:-1]]
    assert len(checkpoints) == len(set(checkpoints)) >= 3  # one per interval
    with Brain(built, writer=False) as b:
        assert seqs[-1] == b.log.last_seq  # and the newest
        assert all(f.ok for f in verify_snapshots(b.log, b.store.snapshots))


command = st.one_of(
    st.tuples(st.just("query"), st.sampled_from(QUESTIONS)),
    st.tuples(st.just("learn"), st.sampled_from([1.0, -1.0, 0.5])),
    st.tuples(st.just("inject"), st.sampled_from(["CORRECTION", "TEACHING"])),
    st.tuples(st.just("config"), st.integers(1, 4)),
    st.tuples(st.just("edit"), st.integers(0, 3)),
    st.tuples(st.just("decay"), st.integers(1, 30)),
    st.tuples(st.just("snapshot"), st.just(0)),
)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(command, min_size=1, max_size=12))
def test_replay_verify_holds_after_any_sequence_of_commands(cmds: list[tuple[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(EXAMPLE, ws)
        clock = TickClock()
        brain, _ = Brain.init(Path(tmp) / "b", ws, clock=clock, snapshot_every=3)
        with brain as b:
            last = ""
            for verb, arg in cmds:
                if verb == "query":
                    last = b.query(str(arg), chat_id="c").trace_id
                elif verb == "learn" and last:
                    b.learn(float(arg), trace_id=last, again=True)  # type: ignore[arg-type]
                elif verb == "inject" and last:
                    b.inject(str(arg), f"note {len(b.graph.nodes)}", chat_id="c")
                elif verb == "config":
                    b.set_config("traversal.max_hops", arg)
                elif verb == "edit":
                    note = ws / "notes" / f"extra-{arg}.md"
                    note.write_text(f"# Extra {arg}\n\nRoll back with care, step {len(cmds)}.\n")
                    b.sync(ws)
                elif verb == "decay":
                    clock.advance(int(arg) * 86_400 * 10**9)  # type: ignore[call-overload]
                    maintain(b.store, ["decay"], clock=clock)
                elif verb == "snapshot":
                    b.store.load(*PROJECTIONS)
                    b.store.save_snapshots(force=True)
            live = snaps(b)
        with Brain(Path(tmp) / "b", writer=False) as b:
            assert all(f.ok for f in verify_live(b.log, b.store.snapshots))
            assert all(f.ok for f in verify_snapshots(b.log, b.store.snapshots))
            full = rebuild(b.log)
            assert {n: PROJECTIONS[n].snapshot(full[n]) for n in PROJECTIONS} == live


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


def test_cli_as_of_snapshot_replay_and_verify(built: Path) -> None:
    code, out, _ = ocb("query", QUESTIONS[0], "--brain", built, "--json", "--as-of", "30")
    assert code == 0 and json.loads(out)["trace_id"] == ""
    code, out, _ = ocb("events", "--brain", built, "--as-of", "2")
    assert code == 0 and [json.loads(x)["seq"] for x in out.splitlines()] == [1, 2]
    code, out, _ = ocb("doctor", "--brain", built, "--as-of", "29")
    assert code == 0 and "equal a full rebuild at seq 29" in out
    code, out, _ = ocb("health", "--brain", built, "--as-of", "30", "--json")
    assert code == 0 and json.loads(out)["window"] == 0
    code, _, err = ocb("query", "x", "--brain", built, "--as-of", "99")
    assert code == 1 and err.splitlines()[0] == "error: --as-of 99 is outside the history"
    code, _, err = ocb("query", "x", "--brain", built, "--as-of", "yesterday-ish")
    assert code == 1 and "neither a seq nor an ISO time" in err
    code, out, _ = ocb("snapshot", "--brain", built, "--json")
    assert code == 0 and {r["projection"] for r in json.loads(out)} <= set(PROJECTIONS)
    code, out, _ = ocb("replay", "--brain", built, "--verify")
    assert code == 0 and out.count("PASS  projection") == len(PROJECTIONS)
    code, out, _ = ocb("verify", "--brain", built, "--json")
    got = json.loads(out)
    assert code == 0 and got["ok"] and got["checks"][0]["what"] == "log"
    seg = next((built / "log").glob("*.seg"))
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    code, out, _ = ocb("verify", "--brain", built)
    assert code == 1 and out.startswith("FAIL  log: log corrupt at seq ")
    assert "offset" in out.splitlines()[0]
