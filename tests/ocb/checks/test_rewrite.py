"""``ocb verify --rewrite`` on a brain whose log was written in the old encoding (query
traces as maps of field names): every record stays, the log verifies before and after,
queries, what-if and the projections give what they gave, and the snapshots built from
the old bytes are not used again."""

from __future__ import annotations

from pathlib import Path

import msgspec
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb_events.frames import encode_frame, segment_header
from ocb_events.log import SegmentLog
from ocb_events.marks import write_seals
from ocb_events.schema import LogRepaired, QueryTraced
from replay import PROJECTIONS, rebuild

runner = CliRunner()
_OLD = msgspec.msgpack.Encoder()


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


def _as_old_format(log_dir: Path) -> None:
    """Write the log again as an older ocb left it: every record a map of field names,
    one plain segment, chained."""
    with SegmentLog(log_dir, writer=False) as log:
        recs = list(log.read())
    for p in log_dir.iterdir():
        p.unlink()
    chain = bytes(16)
    out = bytearray(segment_header(1, chain))
    for r in recs:
        frame, chain = encode_frame(r.seq, r.ts, _OLD.encode(r), chain)
        out += frame
    (log_dir / f"{1:020d}.seg").write_bytes(bytes(out))
    write_seals(log_dir, {})


def _folded(path: Path) -> dict[str, bytes]:
    with SegmentLog(path / "log", writer=False) as log:
        states = rebuild(log, to_seq=log.last_seq)
    return {n: PROJECTIONS[n].snapshot(s) for n, s in states.items()}


def test_rewrite_keeps_the_records_and_verifies_before_and_after(built: Path) -> None:
    with Brain(built) as b:
        for q in ("how do I roll back a bad deploy", "who owns the billing service"):
            b.learn(1.0, trace_id=b.query(q).trace_id)
    _as_old_format(built / "log")
    with SegmentLog(built / "log", writer=False) as log:
        before = list(log.read())
    assert any(isinstance(r.event, QueryTraced) for r in before)
    folded = _folded(built)
    code, out, err = ocb("verify", "--brain", built)
    assert code == 0, out + err

    code, out, err = ocb("verify", "--brain", built, "--rewrite")
    assert code == 0, out + err
    traces = sum(isinstance(r.event, QueryTraced) for r in before)
    assert out.startswith(
        f"rewrote the log: {len(before)} records, {traces} in the compact format;"
    )
    assert f"recorded as seq {len(before) + 1}\n" in out
    assert "\nPASS  log: " in out and "FAIL" not in out

    with SegmentLog(built / "log", writer=False) as log:
        after = list(log.read())
    assert after[:-1] == before
    assert isinstance(after[-1].event, LogRepaired) and after[-1].event.rebased_from > 0
    with SegmentLog(built / "log", writer=False) as log:
        states = rebuild(log, to_seq=len(before))
    assert {n: PROJECTIONS[n].snapshot(s) for n, s in states.items()} == folded
    code, out, err = ocb("verify", "--brain", built)
    assert code == 0, out + err


def test_rewrite_without_a_brain_is_one_line(tmp_path: Path) -> None:
    code, _, err = ocb("verify", "--brain", tmp_path / "nothing", "--rewrite")
    assert code == 1
    assert err.startswith("error: ") and "Traceback" not in err
