"""Brains on a shared log in PostgreSQL: ``ocb init --log``, a second brain joining,
copies of one workspace on two machines, ``ocb log migrate`` both ways, and the same
records rebuilding to the same bytes from either log."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from hypothesis import given, strategies as st
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.graph.copies import BEHIND, ELSEWHERE, REMOVED_ELSEWHERE, screen
from ocb.log_migrate import BACKUP, migrate_log
from ocb.shared_log import LOCATION, PASSWORD_FILE, attach, location
from ocb_events.clock import TickClock
from ocb_events.codec import EdgesPackedRaw, Skipped as SkippedRecord
from ocb_events.log import SegmentLog
from ocb_events.pg import PostgresLog, verify_postgres
from replay import PROJECTIONS, rebuild
from replay.folding import read_for
from tests.ocb.support import QUESTIONS, fresh_copy
from tests.pg_server import PgServer
from workspace_sync.scan import FileText, Skipped

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _snapshots(states: dict[str, object]) -> dict[str, bytes]:
    return {name: PROJECTIONS[name].snapshot(states[name]) for name in sorted(PROJECTIONS)}


def _join(path: Path, url: str, workspace: Path) -> Brain:
    attach(path, url, workspace)
    brain, _ = Brain.init(path, workspace, clock=TickClock())
    return brain


# ------------------------------------------------------------------ init and join


def test_a_second_brain_joins_and_records_only_what_its_copy_adds(
    pg_server: PgServer, tmp_path: Path
) -> None:
    url = pg_server.fresh_url()
    ws1, ws2 = fresh_copy(tmp_path / "ws1"), fresh_copy(tmp_path / "ws2")
    (ws2 / "extra.md").write_text("# Extra\n\nOnly the second machine has this note.\n")
    with _join(tmp_path / "b1", url, ws1) as b1:
        first = b1.log.last_seq
    with _join(tmp_path / "b2", url, ws2) as b2:
        added = list(b2.events(since=first))
        assert {type(r.event).__name__ for r in added} >= {"FileIndexed"}
        paths = {getattr(r.event, "path", None) for r in added} - {None}
        assert paths == {"extra.md"}, "the same content is never recorded twice"
        answer = b2.query(QUESTIONS[0], top=2)
        assert answer.results
        end = b2.log.last_seq
        assert _snapshots({n: b2.state(n) for n in PROJECTIONS}) == _snapshots(rebuild(b2.log))
    doctor = runner.invoke(app, ["doctor", "--brain", str(tmp_path / "b2"), "--json"])
    checks = {c["name"]: c["status"] for c in json.loads(doctor.output)["checks"]}
    assert checks["log integrity"] == checks["blobs"] == "pass", doctor.output  # fetched
    with Brain(tmp_path / "b1") as b1:  # folds what the other brain recorded
        assert b1.log.last_seq == end
        assert "extra.md" in b1.graph.files
        assert _snapshots({n: b1.state(n) for n in PROJECTIONS}) == _snapshots(rebuild(b1.log))


def test_init_with_a_password_keeps_it_out_of_every_file_but_one(
    pg_server: PgServer, tmp_path: Path, workspace: Path
) -> None:
    from tests.pg_server import PASSWORD

    url = pg_server.password_url(PASSWORD, "pwbrain")
    brain = tmp_path / "brain"
    got = runner.invoke(
        app, ["init", "--workspace", str(workspace), "--brain", str(brain), "--log", url]
    )
    assert got.exit_code == 0, got.output
    assert PASSWORD not in got.output
    secret = brain / PASSWORD_FILE
    assert secret.read_text() == PASSWORD
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    for p in brain.rglob("*"):
        if p.is_file() and p != secret:
            assert PASSWORD.encode() not in p.read_bytes(), p
    loc = location(brain)
    assert loc is not None and PASSWORD not in loc.url and loc.workspace == str(workspace.resolve())
    with PostgresLog(pg_server.password_url(PASSWORD, "pwbrain")) as log:
        assert all(PASSWORD not in r.actor for r in log.read())
        assert not any(PASSWORD.encode() in row.payload for row in log.stored())


def test_a_brain_keeps_its_copy_of_the_workspace(pg_server: PgServer, tmp_path: Path) -> None:
    url = pg_server.fresh_url()
    ws = fresh_copy(tmp_path / "ws")
    _join(tmp_path / "b", url, ws).close()
    other = fresh_copy(tmp_path / "other")
    args = ["init", "--workspace", str(other), "--brain", str(tmp_path / "b"), "--log", url]
    got = runner.invoke(app, args)
    assert got.exit_code == 1
    assert got.output.startswith(f"error: brain {tmp_path / 'b'} was built from workspace {ws}")
    again = runner.invoke(app, ["init", "--workspace", str(ws), "--brain", str(tmp_path / "b")])
    assert again.exit_code == 0 and again.output.startswith("indexed 0 new, 0 changed")


def test_init_on_an_unreachable_server_is_one_line(tmp_path: Path, workspace: Path) -> None:
    url = "postgresql://me:pw-9x@127.0.0.1:1/brains?connect_timeout=2"
    got = runner.invoke(
        app, ["init", "--workspace", str(workspace), "--brain", str(tmp_path / "b"), "--log", url]
    )
    assert got.exit_code == 1
    lines = got.output.strip().splitlines()
    assert lines[0].startswith("error: the log at postgresql://me@127.0.0.1:1/brains")
    assert lines[1].startswith("hint: ") and len(lines) == 2
    assert "pw-9x" not in got.output and "Traceback" not in got.output


def test_without_the_driver_the_error_names_the_extra(pg_server: PgServer) -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from ocb_events.pg import PostgresLog\n"
        "from ocb_events.errors import LogUnavailable\n"
        "try:\n    PostgresLog(sys.argv[1])\n"
        "except LogUnavailable as e:\n    print(e.message); print(e.hint)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code, pg_server.fresh_url()], capture_output=True, text=True, env=env
    )
    assert out.stdout.splitlines()[1] == "pip install 'ocb[postgres]'", out.stderr


# ------------------------------------------------------------------ copies of one workspace


def _edit(ws: Path, name: str, text: str) -> None:
    (ws / name).write_text(text)


def test_two_copies_never_flip_a_files_chunks(pg_server: PgServer, tmp_path: Path) -> None:
    url = pg_server.fresh_url()
    ws1, ws2 = fresh_copy(tmp_path / "ws1"), fresh_copy(tmp_path / "ws2")
    target = "runbooks/rollback.md"
    _join(tmp_path / "b1", url, ws1).close()
    _join(tmp_path / "b2", url, ws2).close()

    def sync(n: int) -> tuple[int, list[tuple[str, str]]]:
        with Brain(tmp_path / f"b{n}", clock=TickClock()) as b:
            before = b.log.last_seq
            report = b.sync(tmp_path / f"ws{n}")
            return b.log.last_seq - before, report.skipped

    _edit(ws1, target, "# Rollback\n\nMachine one rewrote the rollback runbook.\n")
    assert sync(1)[0] > 0
    recorded, skipped = sync(2)  # an older copy: records nothing, says why
    assert recorded == 0 and (target, BEHIND) in skipped
    assert sync(1) == (0, [])
    _edit(ws2, target, "# Rollback\n\nMachine two edited it after that.\n")
    assert sync(2)[0] > 0, "a real edit on the second machine is recorded"
    recorded, skipped = sync(1)
    assert recorded == 0 and (target, BEHIND) in skipped
    for _ in range(2):
        assert sync(1)[0] == 0 and sync(2)[0] == 0, "nothing flips back and forth"
    with PostgresLog(url) as log:
        texts = [r for r in log.read() if getattr(r.event, "path", "") == target]
        assert len(texts) == 3  # indexed once, then one change per real edit


FILES = st.dictionaries(st.sampled_from("abcd"), st.sampled_from(["h1", "h2", "h3"]), max_size=4)


@given(local=FILES, logged=FILES, bases=FILES)
def test_screen_records_a_file_only_when_this_copy_changed(
    local: dict[str, str], logged: dict[str, str], bases: dict[str, str]
) -> None:
    files = [FileText(p, "", h) for p, h in sorted(local.items())]
    got = screen(files, [], logged, bases)
    kept = {f.path for f in got.files}
    left = {s.path: s.reason for s in got.skipped}
    for path, h in local.items():
        changed_here = bases.get(path) != h
        assert (path in kept) == (changed_here or logged.get(path) == h)
        if path not in kept:
            assert left[path] == (BEHIND if path in logged else REMOVED_ELSEWHERE)
    for path in sorted(set(logged) - set(local)):
        removed_here = bases.get(path) == logged[path]
        assert (path in left) != removed_here
        if not removed_here:
            assert left[path] == (ELSEWHERE if path not in bases else BEHIND)
    # a copy that recorded what it has is settled: the next screen changes nothing
    settled = screen(
        files, [], {**logged, **{f.path: f.content_hash for f in got.files}}, got.bases
    )
    assert {f.path for f in settled.files} == kept
    assert settled.bases == got.bases


def test_screen_keeps_what_the_scan_skipped() -> None:
    got = screen([], [Skipped("big.md", "too large")], {"big.md": "h"}, {})
    assert got.skipped == [Skipped("big.md", "too large")]


# ------------------------------------------------------------------ migrate and rebuild


def test_the_same_records_rebuild_to_the_same_bytes_from_either_log(
    pg_server: PgServer, built: Path
) -> None:
    with Brain(built, clock=TickClock()) as b:
        b.learn(1.0, trace_id=b.query("rate limit").trace_id, rule="pg")  # edge weights
        for q in QUESTIONS:
            b.learn(1.0, trace_id=b.query(q).trace_id)
    with SegmentLog(built / "log", writer=False) as local:
        want = _snapshots(rebuild(local))
        chain = local.chain_of(local.last_seq)
    report = migrate_log(built, to=pg_server.fresh_url())
    assert report.chain == chain.hex() if chain else False
    assert (built / BACKUP).is_dir() and not (built / "log").exists()
    with Brain(built) as b:
        assert isinstance(b.log, PostgresLog)
        # a rebuild decodes only what the folds read, weight updates left packed for arrays
        kinds = {type(r.event) for r in read_for(b.log, ["graph"], 1, b.log.last_seq)}
        assert EdgesPackedRaw in kinds and any(issubclass(k, SkippedRecord) for k in kinds)
        assert _snapshots(rebuild(b.log)) == want
        assert _snapshots({n: b.state(n) for n in PROJECTIONS}) == want
        assert b.query(QUESTIONS[1]).results
        grown = b.log.last_seq
        grown_chain = b.log.chain_of(grown)
        assert verify_postgres(b.log).chain == grown_chain
    back = migrate_log(built, to_local=True)
    assert (back.records, back.chain) == (grown, grown_chain.hex() if grown_chain else "")
    assert location(built) is None and not (built / LOCATION).exists()
    with Brain(built) as b:
        assert isinstance(b.log, SegmentLog) and b.log.last_seq == grown
        assert b.query(QUESTIONS[2]).results


def test_migrate_from_the_command_line(pg_server: PgServer, built: Path) -> None:
    url = pg_server.fresh_url()
    got = runner.invoke(app, ["log", "migrate", "--to", url, "--brain", str(built), "--json"])
    assert got.exit_code == 0, got.output
    assert '"records":' in got.output and "postgres:@" not in got.output
    again = runner.invoke(app, ["log", "migrate", "--to", url, "--brain", str(built)])
    assert again.exit_code == 1
    assert again.output.startswith(f"error: brain {built} already keeps its log at ")
    neither = runner.invoke(app, ["log", "migrate", "--brain", str(built)])
    assert neither.exit_code == 1
    assert "error: give --to (a PostgreSQL URL) or --to-local, one of them" in neither.output
    home = runner.invoke(app, ["log", "migrate", "--to-local", "--brain", str(built)])
    assert home.exit_code == 0, home.output
    assert home.output.startswith("copied ")
    shutil.rmtree(built / BACKUP)


def test_log_commands_have_help_with_an_example() -> None:
    from tests.golden_files import check
    from tests.ocb.cli.support import ocb

    code, out, _ = ocb("log", "migrate", "--help")
    assert code == 0 and "ocb log migrate" in out.split("Example:")[1]
    check("cli/help-log-migrate.txt", out)
    code, out, _ = ocb("log", "--help")
    assert code == 0 and "migrate" in out
    check("cli/help-log.txt", out)


def test_verify_checks_the_shared_log_and_names_a_damaged_seq(
    pg_server: PgServer, tmp_path: Path
) -> None:
    url = pg_server.fresh_url()
    _join(tmp_path / "b", url, fresh_copy(tmp_path / "ws")).close()
    got = runner.invoke(app, ["verify", "--brain", str(tmp_path / "b"), "--json"])
    assert got.exit_code == 0, got.output
    schema = url.rsplit("schema=", 1)[1]
    pg_server.sql(f'UPDATE "{schema}".records SET ts = ts + 1 WHERE seq = 5')
    bad = runner.invoke(app, ["verify", "--brain", str(tmp_path / "b")])
    assert bad.exit_code == 1
    assert "log corrupt at seq 5" in bad.output and "hash chain" in bad.output
    repair = runner.invoke(app, ["verify", "--repair", "--brain", str(tmp_path / "b")])
    assert repair.exit_code == 1 and "keeps its log on PostgreSQL" in repair.output
