"""``ocb verify`` prints the head of the hash chain, and a head kept elsewhere
(``--head SEQ:HEX``) shows a history rewritten with a consistent chain, which nothing
inside the log can show."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec
from typer.testing import CliRunner

from ocb.cli.app import app
from ocb_events.log import SegmentLog
from ocb_events.schema import KgFactSet, Record
from tests.ocb_events.tamper import replace_text, rewrite_history

runner = CliRunner()


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


def _head(path: Path) -> str:
    code, out, _ = ocb("verify", "--brain", path)
    assert code == 0, out
    last = out.splitlines()[-1]
    assert re.fullmatch(r"head  \d+:[0-9a-f]{32}", last), last
    return last.split()[1]


def _forge(seq: int) -> Callable[[Record], Record]:
    """Every record as it was, but the value of the statement at ``seq``."""

    def forge(r: Record) -> Record:
        if r.seq == seq and isinstance(r.event, KgFactSet):
            return msgspec.structs.replace(
                r, event=msgspec.structs.replace(r.event, value="999/min")
            )
        return r

    return forge


def test_verify_prints_the_head_of_the_chain(facts: tuple[Path, int]) -> None:
    path, _ = facts
    with SegmentLog(path / "log", writer=False) as log:
        want = f"{log.last_seq}:{log.chain_of(log.last_seq).hex()}"  # type: ignore[union-attr]
    assert _head(path) == want
    code, out, _ = ocb("verify", "--brain", path, "--json")
    assert code == 0
    seq, chain = want.split(":")
    assert json.loads(out)["head"] == {"seq": int(seq), "chain": chain, "text": want}
    code, out, _ = ocb("verify", "--brain", path, "--head", want, "--head", f"1:{'0' * 32}")
    assert code == 1
    lines = out.splitlines()
    assert lines[1].startswith(f"PASS  head {seq}: the history up to seq {seq} is the one")
    assert lines[2].startswith("FAIL  head 1: the chain at seq 1 is ")


def test_a_head_kept_elsewhere_shows_a_history_rewritten_with_a_consistent_chain(
    facts: tuple[Path, int],
) -> None:
    path, seq = facts
    kept = _head(path)
    rewrite_history(path / "log", _forge(seq))
    shutil.rmtree(path / "snapshots")  # they carry the old chain: a forger drops them
    shutil.rmtree(path / "cache")
    code, out, _ = ocb("verify", "--brain", path)
    assert code == 0 and out.startswith("PASS  log:"), "nothing inside the brain can show it"
    code, out, _ = ocb("verify", "--brain", path, "--head", kept)
    assert code == 1
    failed = [line for line in out.splitlines() if line.startswith("FAIL")]
    last = kept.split(":")[0]
    assert failed == [
        f"FAIL  head {last}: the chain at seq {last} is {_head_of(path, int(last))}, not "
        f"{kept.split(':')[1]}: the history up to seq {last} was rewritten (or the head is of "
        "another brain)"
    ]


def _head_of(path: Path, seq: int) -> str:
    with SegmentLog(path / "log", writer=False) as log:
        chain = log.chain_of(seq)
    assert chain is not None
    return chain.hex()


def test_a_head_on_a_damaged_log_says_which_records_it_still_vouches_for(
    facts: tuple[Path, int],
) -> None:
    path, seq = facts
    kept = _head(path)
    last = int(kept.split(":")[0])
    replace_text(path / "log", seq, b"120/min", b"999/min", rechain=False)
    code, out, _ = ocb("verify", "--brain", path, "--head", kept)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"FAIL  log: log corrupt at seq {seq} ")
    assert lines[1] == (
        f"WARN  head {last}: the chain at seq {last} is as kept: it vouches for records "
        f"{seq + 1}..{last} only; the chain breaks at seq {seq}"
    )
    assert not any(line.startswith("head ") for line in lines), "no head of a broken log"
    code, out, _ = ocb("verify", "--brain", path, "--json")
    assert json.loads(out)["head"] is None


def test_after_a_repair_the_old_head_fails_and_the_new_one_holds(
    facts: tuple[Path, int],
) -> None:
    path, seq = facts
    kept = _head(path)
    replace_text(path / "log", seq, b"120/min", b"999/min", rechain=False)
    code, out, _ = ocb("verify", "--brain", path, "--repair")
    assert code == 0
    new = out.splitlines()[-1].split()[1]
    assert new != kept
    assert ocb("verify", "--brain", path, "--head", kept)[0] == 1
    assert ocb("verify", "--brain", path, "--head", new)[0] == 0


def test_a_head_of_the_wrong_shape_or_past_the_end_is_refused(facts: tuple[Path, int]) -> None:
    path, _ = facts
    kept = _head(path)
    seq, chain = kept.split(":")
    for bad in ("12", f"x:{chain}", f"{seq}:{chain[:-1]}", f"0:{chain}"):
        code, out, err = ocb("verify", "--brain", path, "--head", bad)
        assert (code, out) == (1, ""), bad
        lines = err.splitlines()
        assert len(lines) == 2 and lines[0].startswith("error: --head takes SEQ:HEX")
        assert lines[1].startswith("hint: ")
    code, out, err = ocb("verify", "--brain", path, "--head", kept, "--repair")
    assert (code, out) == (1, "") and err.startswith("error: --head checks the history as it is")
    code, out, _ = ocb("verify", "--brain", path, "--head", f"{int(seq) + 5}:{chain}")
    assert code == 1
    assert f"FAIL  head {int(seq) + 5}: the log ends at seq {seq}: records up to seq" in out
