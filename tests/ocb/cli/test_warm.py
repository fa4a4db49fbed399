"""``ocb warm`` on the command line and through a real daemon: its summary and JSON,
one-line errors for a missing path or a file that is not JSONL (nothing recorded),
skipped lines named, and a second run recording nothing."""

from __future__ import annotations

import json
from pathlib import Path

from ocb.brain import Brain
from tests.ocb.cli.support import QUESTION, log_bytes, ocb, one_error
from tests.ocb.daemon import support as live
from tests.ocb.graph.sessions import Exchange, write_session

WRONG = "No, that's wrong: the on-call rota in notes/team.md names Priya this week."


def _session(brain: Path, path: Path) -> Path:
    """A session: the rollback question answered citing a chunk it fires, a question
    answered without evidence and corrected by the next message, still unanswered."""
    with Brain(brain, writer=False) as b:
        node = b.graph.nodes[b.query(QUESTION, record=False).fired[0]]
    return write_session(path, [
        Exchange(QUESTION, f"Roll back with helm ({node.source})."),
        Exchange("who is on call", "I am not sure."),
        Exchange(WRONG),
    ])  # fmt: skip


def test_warm_prints_a_summary_and_a_second_run_records_nothing(
    cli_brain: Path, tmp_path: Path
) -> None:
    path = _session(cli_brain, tmp_path / "s.jsonl")
    code, out, err = ocb("warm", "--sessions", path, "--brain", cli_brain)
    assert (code, err) == (0, "")
    assert out == (
        "read 1 transcript(s): 2 answered turn(s), 0 warmed before, 1 awaiting an answer\n"
        "recorded 2 queries (seq 44-51); outcomes: 1 positive (used), 1 negative "
        "(1 corrected, 0 missed), 0 without evidence\n"
        "corrections: 1 candidate(s), not recorded (pass --corrections)\n"
    )
    before = log_bytes(cli_brain)
    code, out, err = ocb("warm", "--sessions", tmp_path, "--brain", cli_brain, "--json")
    assert (code, err) == (0, "") and log_bytes(cli_brain) == before
    assert json.loads(out) == {
        "dry_run": False,
        "transcripts": [{
            "path": str(path), "session_id": "sess-1", "turns": 2, "new": 0, "known": 2,
            "pending": 1, "unanswered": 0, "late": 0, "skipped": [],
        }],
        "turns": 2, "queries": 0,
        "outcomes": {"used": 0, "corrected": 0, "missed": 0, "none": 0},
        "corrections": {"asked": False, "candidates": 0, "recorded": 0},
        "first_seq": 0, "last_seq": 0,
    }  # fmt: skip


def test_a_dry_run_with_corrections_counts_and_records_nothing(
    cli_brain: Path, tmp_path: Path
) -> None:
    path = _session(cli_brain, tmp_path / "s.jsonl")
    before = log_bytes(cli_brain)
    code, out, _ = ocb(
        "warm", "--sessions", path, "--brain", cli_brain, "--dry-run", "--corrections"
    )
    assert code == 0 and log_bytes(cli_brain) == before
    assert out.splitlines()[1:] == [
        "would record 2 queries; outcomes: 1 positive (used), 1 negative (1 corrected, "
        "0 missed), 0 without evidence",
        "corrections: 1 candidate(s), would record 1 as CORRECTION nodes",
    ]


def test_skipped_lines_are_named_with_their_reason(cli_brain: Path, tmp_path: Path) -> None:
    path = _session(cli_brain, tmp_path / "s.jsonl")
    path.write_text(path.read_text() + "not json\n")
    code, out, _ = ocb("warm", "--sessions", path, "--brain", cli_brain)
    assert code == 0
    assert out.splitlines()[-1] == f"skipped {path} line 10: not JSON (Expecting value)"


def test_a_missing_path_or_a_file_that_is_not_jsonl_is_one_error_and_nothing_recorded(
    cli_brain: Path, tmp_path: Path
) -> None:
    good = _session(cli_brain, tmp_path / "s.jsonl")
    notes = tmp_path / "notes.jsonl"
    notes.write_text("Monday: deployed 3.14\nTuesday: rolled back\n")
    (tmp_path / "empty").mkdir()
    before = log_bytes(cli_brain)
    for paths, pattern in [
        ([good, tmp_path / "nope.jsonl"], r"error: no such transcript file or directory: "),
        ([good, notes], r"error: .*notes.jsonl is not a JSONL transcript: line 1: not JSON"),
        ([tmp_path / "empty"], r"error: no \*\.jsonl file under "),
    ]:
        args = [a for p in paths for a in ("--sessions", p)]
        code, out, err = ocb("warm", *args, "--brain", cli_brain)
        assert (code, out) == (1, "")
        one_error(err, pattern)
    assert log_bytes(cli_brain) == before
    code, _, err = ocb("warm", "--brain", cli_brain)
    assert code == 2 and "Missing option '--sessions'" in err


def test_warm_through_the_daemon_takes_a_relative_path_and_records_once(
    cli_brain: Path, tmp_path: Path
) -> None:
    _session(cli_brain, tmp_path / "chats" / "s.jsonl")
    with live.daemon(cli_brain):
        args = ("warm", "--sessions", "chats", "--brain", str(cli_brain), "--json")
        dry = live.ocb(*args, "--dry-run", cwd=tmp_path)
        assert dry.returncode == 0, dry.stderr
        assert json.loads(dry.stdout)["queries"] == 2 and live.hello(cli_brain)["seq"] == 43  # type: ignore[index]
        got = live.ocb(*args, cwd=tmp_path)
        assert got.returncode == 0, got.stderr
        report = json.loads(got.stdout)
        assert (report["queries"], report["first_seq"], report["last_seq"]) == (2, 44, 51)
        marks = live.rpc(cli_brain, "events", since=43, types=["turn_warmed"])
        assert [m["event"]["turn"] for m in marks] == [0, 1]
        again = live.ocb(*args, cwd=tmp_path)
        assert json.loads(again.stdout)["queries"] == 0
        assert live.hello(cli_brain)["seq"] == 51  # type: ignore[index]


def test_a_fifo_never_hangs_warm(cli_brain: Path, tmp_path: Path) -> None:
    """A FIFO named as a session is one error; one inside a sessions directory is not
    read; the console script runs with a deadline, so a hang fails the test."""
    import os
    import subprocess
    import sys

    from tests.ocb.daemon.support import DEADLINE, ROOT, env

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    _session(cli_brain, sessions / "good.jsonl")
    os.mkfifo(sessions / "pipe.jsonl")
    before = log_bytes(cli_brain)

    def warm(path: Path) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "ocb.entry", "warm", "--sessions", str(path),
                "--brain", str(cli_brain), "--json"]  # fmt: skip
        return subprocess.run(
            argv, env=env(), capture_output=True, text=True, timeout=DEADLINE, cwd=str(ROOT)
        )

    named = warm(sessions / "pipe.jsonl")
    assert named.returncode == 1 and named.stdout == ""
    one_error(named.stderr, r"error: transcript .*pipe\.jsonl is not a regular file")
    assert log_bytes(cli_brain) == before
    whole = warm(sessions)
    assert whole.returncode == 0, whole.stderr
    read = json.loads(whole.stdout)["transcripts"]
    assert [Path(t["path"]).name for t in read] == ["good.jsonl"]
