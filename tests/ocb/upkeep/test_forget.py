"""Forgetting content for good: no byte of the brain holds it afterwards, the history
still verifies (seqs, checksums, hash chain), and what was erased is itself recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.upkeep.forget import MARKER
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import ContentForgotten, FactsRecorded, OutcomeRecorded, QueryTraced
from replay import PROJECTIONS, rebuild
from tests.ocb.daemon.support import daemon, ocb as cli, stop, wait_for

TOKEN = "zq7Kp2Vx9Lm4Rt8Wy3Nb"  # a word no rule of the secret scanner would flag here
NOTE = f"# Access\n\nThe staging password is {TOKEN} until Friday.\n\nRotate it after the demo.\n"
runner = CliRunner()


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


def every_byte(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


@pytest.fixture
def leaky(tmp_path: Path, workspace: Path) -> tuple[Path, Path]:
    """A brain that recorded TOKEN in a file (two versions), a query, a fact and kg."""
    (workspace / "notes" / "access.md").write_text(NOTE)
    path = tmp_path / "brain"
    with Brain.create(path, clock=TickClock()) as b:
        b.set_config("secrets.enabled", False)
        b.sync(workspace)
        b.query(f"what is {TOKEN} for", chat_id="c1")
        (workspace / "notes" / "access.md").write_text(NOTE + "\nAsk Priya first.\n")
        b.sync(workspace)
        b.retain(f"the demo account uses {TOKEN}", entities=["Priya"])
        b.kg_set("staging", "password", TOKEN)
        b.kg_set(f"host-{TOKEN}", "owner", "Priya")  # names can hold it too
        b.set_config("storage.snapshot_tail", 1)
        b.query("how do I roll back a bad deploy")
    assert TOKEN.encode() in every_byte(path)
    return workspace, path


def test_forgetting_a_text_erases_it_from_every_byte_and_keeps_the_history_verifiable(
    leaky: tuple[Path, Path],
) -> None:
    workspace, path = leaky
    with Brain(path) as b:
        last = b.log.last_seq
        chain = b.log.chain_of(last)
    disk = (workspace / "notes" / "access.md").read_bytes()
    code, out, err = ocb("forget", "--brain", path, "--text", TOKEN, "--reason", "pasted", "--json")
    assert code == 0, err
    assert TOKEN.encode() not in every_byte(path), "log, blobs, snapshots and caches"
    assert "notes/access.md still holds it on disk" in err
    assert (workspace / "notes" / "access.md").read_bytes() == disk, "the user's file stays"
    report = msgspec.json.decode(out)
    assert report["recorded"] == last + 1 and report["blobs"] >= 1 and len(report["seqs"]) >= 5
    with Brain(path) as b:
        assert b.log.chain_of(last) == chain, "the hash chain still names the same history"
        rec = list(b.log.read(last + 1))[0]
        assert isinstance(rec.event, ContentForgotten)
        assert (
            rec.event.what == f"a text of {len(TOKEN)} characters" and rec.event.reason == "pasted"
        )
        full = rebuild(b.log)
        b.store.load(*PROJECTIONS)
        for name in PROJECTIONS:
            assert PROJECTIONS[name].snapshot(b.state(name)) == PROJECTIONS[name].snapshot(
                full[name]
            )
        node = next(n for n in b.graph.nodes.values() if MARKER in n.text)
        again = b.store.embedder().embed(["\n".join(p for p in (node.heading, node.text) if p)])
        assert (b.store.vectors_of([node.id]) == again).all(), "the vector is of the redacted text"
        assert b.query("staging password rotate demo").results
    for command in ("verify", "doctor"):
        code, out, _ = ocb(command, "--brain", path)
        assert code == 0, out


def test_forgetting_a_file_erases_every_version_and_its_path_and_a_dry_run_changes_nothing(
    leaky: tuple[Path, Path],
) -> None:
    workspace, path = leaky
    before = every_byte(path)
    code, out, _ = ocb("forget", "--brain", path, "--file", "notes/access.md", "--dry-run")
    assert code == 0 and out.startswith("would forget file notes/access.md in ")
    assert every_byte(path) == before
    code, out, _ = ocb("forget", "--brain", path, "--file", "notes/access.md", "--json")
    assert code == 0
    report = msgspec.json.decode(out)
    name = f"[forgotten-{report['recorded']}]"
    assert "file_indexed.path" in report["field_names"], report["field_names"]
    assert "nodes_embedded.node_ids" in report["field_names"]
    assert b"notes/access.md" not in every_byte(path), "no record names the file any more"
    with Brain(path) as b:
        assert "notes/access.md" not in b.graph.files and name in b.graph.files
        texts = [b.graph.nodes[i].text for i in b.graph.files[name].chunks]
        assert texts and all(t == MARKER for t in texts)
        assert all(i.startswith(name + "::") for i in b.graph.files[name].chunks)
        deploy = [n.text for n in b.graph.nodes.values() if n.path == "runbooks/deploy.md"]
        assert deploy and MARKER not in "".join(deploy), "other files stay as they were"
        # the file is still on disk, unchanged: taken back as a move, its text forgotten
        assert b.sync(workspace).files_moved == 1 and name not in b.graph.files
        texts = [b.graph.nodes[i].text for i in b.graph.files["notes/access.md"].chunks]
        assert texts and all(t == MARKER for t in texts)


def test_forgetting_a_moved_file_erases_its_versions_under_every_path_it_had(
    leaky: tuple[Path, Path],
) -> None:
    workspace, path = leaky
    (workspace / "notes" / "access.md").rename(workspace / "notes" / "secret.md")
    with Brain(path) as b:
        assert b.sync(workspace).files_moved == 1
    code, out, err = ocb("forget", "--brain", path, "--file", "notes/secret.md", "--json")
    assert code == 0, err
    report = msgspec.json.decode(out)
    assert report["still_in_workspace"] == ["notes/secret.md"]
    data = every_byte(path)
    assert b"notes/access.md" not in data and b"notes/secret.md" not in data
    seq = report["recorded"]
    with Brain(path) as b:
        entry = b.graph.files[f"[forgotten-{seq}-2]"]  # notes/secret.md, the second path
        assert all(i.startswith(f"[forgotten-{seq}-1]::") for i in entry.chunks), "its old ids"
        assert all(b.graph.nodes[i].text == MARKER for i in entry.chunks)


def test_forgetting_a_fact_erases_it_in_every_version_and_nothing_else(
    leaky: tuple[Path, Path],
) -> None:
    _, path = leaky
    with Brain(path) as b:
        mem = b.state("memory")
        fid = next(f.id for f in mem.facts.values() if TOKEN in f.content)
        others = {f.id: f.content for f in mem.facts.values() if f.id != fid}
    with Brain(path) as b:
        report = b.forget(fact=fid, reason="wrong fact")
    assert report.fields >= 1
    with Brain(path) as b:
        mem = b.state("memory")
        assert mem.facts[fid].content == MARKER
        assert {f.id: f.content for f in mem.facts.values() if f.id != fid} == others
        for rec in b.log.read():
            if isinstance(rec.event, FactsRecorded):
                assert all(f.content == MARKER for f in rec.event.facts if f.id == fid)


def test_forgetting_a_fact_erases_its_text_from_the_chunk_it_was_parsed_from(
    leaky: tuple[Path, Path],
) -> None:
    """A retained fact is a bullet of a workspace file: its text is in that file's
    chunk records and vectors too, and the file on disk is named."""
    workspace, path = leaky
    with Brain(path) as b:
        b.sync(workspace)
        mem = b.state("memory")
        fact = next(f for f in mem.facts.values() if TOKEN in f.content)
        assert any(fact.content in n.text for n in b.graph.nodes.values())
        report = b.forget(fact=fact.id)
    assert report.still_in_workspace, "the workspace file still holds the bullet"
    assert fact.content.encode() not in every_byte(path)
    with Brain(path) as b:
        assert not any(fact.content in n.text for n in b.graph.nodes.values())


def test_forgetting_a_record_and_the_refusals(leaky: tuple[Path, Path]) -> None:
    _, path = leaky
    with Brain(path) as b:
        seq = next(r.seq for r in b.log.read() if getattr(r.event, "query", "").startswith("what"))
        report = b.forget(seq=seq)
        assert report.field_names == ["query_traced.chat_id", "query_traced.query"]
        ev = list(b.log.read(seq, seq))[0].event
        assert isinstance(ev, QueryTraced) and ev.query == MARKER
        assert ev.chat_id == f"[forgotten-{report.recorded}]" and ev.fired, "its nodes stay"
        before = b.log.last_seq
        for kw, message in [
            ({}, "say what to forget"),
            ({"seq": 1, "text": "abcd"}, "say what to forget"),
            ({"text": "ab"}, "at least 4 characters"),
            ({"text": "no record says this"}, "no record holds"),
            ({"seq": before + 5}, "outside the history"),
        ]:
            with pytest.raises(InputError) as info:
                b.forget(**kw)
            assert message in info.value.message
        assert b.log.last_seq == before


# --------------------------------------------------------------------------- names and keys

AWS = "AKIA" + "Q3VZ7XKD2NR5TW8Y"
SLACK = "xoxb-" + "2837461950-Kd83nVb2LqZ7wX1p"
GITHUB = "ghp_" + "x9Kq2LmZ7vB4nR8tW1yC6pD3sF5gH0jA2eUo"
OPENAI = "sk-proj-" + "7Hq2Zx9LmW4vB8nR1tY6cK3p"
PLACES = {"folder": AWS, "file": GITHUB, "chat_id": SLACK, "request_id": OPENAI, "reason": AWS}
"""Each place a secret went to the history in clear before names and keys were
scanned, with the secret tried there."""
ROTATION = "# Rotation\n\nRotate the staging keys every quarter, on a Monday.\n"
PATHS = {"folder": "keys/{secret}/rotation.md", "file": "notes/rotation-{secret}.md"}


def scenario(b: Brain, workspace: Path, place: str, secret: str) -> None:
    """Index a file, ask in a chat, score the answer with a request id and retract it
    with a reason: the secret in ``place``."""
    rel = PATHS.get(place, "notes/rotation.md").format(secret=secret)
    note = workspace / rel
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(ROTATION)
    chat = f"chat-{secret}" if place == "chat_id" else "c1"
    b.sync(workspace)
    b.query("rotate the staging keys every quarter", chat_id=chat)
    b.learn(1.0, chat_id=chat, request_id=f"req-{secret}" if place == "request_id" else "r1")
    b.retract(chat_id=chat, reason=f"scored by mistake {secret}" if place == "reason" else "")
    b.set_config("storage.snapshot_tail", 1)


def old_daemon_log(path: Path, rel: str) -> None:
    """The log a daemon of an older version left, naming a file in a warning."""
    run = path / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    log = run / "daemon.log"
    log.write_text(f"2026-11-22T09:00:00Z warning: {rel}:3: password redacted before recording\n")
    log.chmod(0o600)


def analytics(path: Path) -> None:
    """Build the analytics cache (``cache/analytics.duckdb``) of the brain at ``path``
    (``ocb sql`` in its own process, as a user runs it)."""
    res = cli("sql", "--brain", str(path), "SELECT count(*) FROM events")
    assert res.returncode == 0, res.stderr
    assert (path / "cache" / "analytics.duckdb").is_file()


def old_brain(path: Path, workspace: Path, place: str) -> str:
    """A brain that recorded the secret of ``place`` in clear, as before this was
    checked (scanning off), then turned scanning on and served one more query."""
    secret = PLACES[place]
    with Brain.create(path, clock=TickClock()) as b:
        b.set_config("secrets.enabled", False)
        scenario(b, workspace, place, secret)
        b.set_config("secrets.enabled", True)
        b.query("rotate the staging keys every quarter")  # its trace passes the net
    analytics(path)
    if place in PATHS:
        old_daemon_log(path, PATHS[place].format(secret=secret))
    assert secret.encode() in every_byte(path)
    return secret


@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_new_brain_records_no_byte_of_a_secret_in_a_name_or_a_key(
    tmp_path: Path, workspace: Path, place: str
) -> None:
    secret = PLACES[place]
    warnings: list[str] = []
    with Brain.create(tmp_path / "brain", clock=TickClock(), warn=warnings.append) as b:
        scenario(b, workspace, place, secret)
    analytics(tmp_path / "brain")
    assert secret.encode() not in every_byte(tmp_path / "brain")
    assert warnings and not [w for w in warnings if secret in w]


@pytest.mark.parametrize("place", sorted(PLACES))
def test_forgetting_a_secret_erases_it_from_every_field_of_an_old_brain(
    tmp_path: Path, workspace: Path, place: str
) -> None:
    """Paths, node ids, chat ids, request ids and reasons included: afterwards no byte
    under the brain directory holds it, the history verifies, replay folds the same
    state, and a sync records it nowhere again."""
    path = tmp_path / "brain"
    secret = old_brain(path, workspace, place)
    code, out, err = ocb("forget", "--brain", path, "--text", secret, "--json")
    assert code == 0, err
    assert secret.encode() not in every_byte(path)
    report = msgspec.json.decode(out)
    wanted = {
        "folder": "file_indexed.path",
        "file": "nodes_embedded.node_ids",
        "chat_id": "query_traced.chat_id",
        "request_id": "outcome_recorded.request_id",
        "reason": "retracted.reason",
    }
    assert wanted[place] in report["field_names"]
    for command in ("verify", "doctor"):
        code, out, _ = ocb(command, "--brain", path)
        assert code == 0, out
    with Brain(path) as b:
        full = rebuild(b.log)
        b.store.load(*PROJECTIONS)
        for name in PROJECTIONS:
            assert PROJECTIONS[name].snapshot(b.state(name)) == PROJECTIONS[name].snapshot(
                full[name]
            )
        b.sync(workspace)
        b.query("rotate the staging keys every quarter", chat_id=f"chat-{secret}")
    analytics(path)
    assert secret.encode() not in every_byte(path)


@pytest.mark.parametrize("place", ["folder", "file"])
def test_forgetting_a_file_named_with_a_secret_leaves_its_path_in_no_record(
    tmp_path: Path, workspace: Path, place: str
) -> None:
    path = tmp_path / "brain"
    secret = old_brain(path, workspace, place)
    rel = PATHS[place].format(secret=secret)
    with Brain(path) as b:
        report = b.sync(workspace)  # held as it is until forgotten
        assert report.events == 0 and rel in b.graph.files
    code, out, err = ocb("forget", "--brain", path, "--file", rel)
    assert code == 0, err
    assert secret not in out + err and "[REDACTED:" in out
    assert secret.encode() not in every_byte(path)
    with Brain(path) as b:
        assert b.sync(workspace).files_removed == 1, "the placeholder is on no disk"
        assert rel not in b.graph.files
    assert secret.encode() not in every_byte(path)


def _daemon_log(path: Path) -> str:
    log = path / "run" / "daemon.log"
    return log.read_text() if log.exists() else ""


def test_through_a_daemon_no_name_or_key_reaches_the_brain_and_forget_erases_old_ones(
    tmp_path: Path, workspace: Path
) -> None:
    """A served brain: a file named with a secret appears while the watcher runs, the
    ``ocb`` client queries, scores (twice, one request id) and retracts with secrets in
    its chat id, request id and reason; then an old brain's secret is forgotten through
    the daemon. Every byte under the brain directories, the daemon's log included."""
    new, old = tmp_path / "new", tmp_path / "old"
    assert cli("init", "--workspace", str(workspace), "--brain", str(new)).returncode == 0
    secrets = (AWS, SLACK, OPENAI, GITHUB)
    with daemon(new) as proc:
        (workspace / "keys" / AWS).mkdir(parents=True)
        (workspace / "keys" / AWS / "rotation.md").write_text(ROTATION)
        wait_for(lambda: "skipped keys/[REDACTED:aws-access-key-id:" in _daemon_log(new), "a sync")
        brain = ("--brain", str(new), "--chat-id", f"chat-{SLACK}")
        for argv in [
            ("query", *brain, "rotate the staging keys every quarter"),
            ("learn", *brain, "--outcome", "1", "--request-id", OPENAI),
            ("learn", *brain, "--outcome", "1", "--request-id", OPENAI),
            ("retract", *brain, "--reason", f"scored by mistake {GITHUB}"),
        ]:
            res = cli(*argv)
            assert res.returncode == 0, res.stderr
            assert not [s for s in secrets if s in res.stdout + res.stderr]
        assert stop(proc) == 0
    assert not [s for s in secrets if s.encode() in every_byte(new)]
    with Brain(new) as b:
        assert sum(isinstance(r.event, OutcomeRecorded) for r in b.log.read()) == 1
    shutil.rmtree(workspace / "keys")
    secret = old_brain(old, workspace, "folder")
    with daemon(old) as proc:
        res = cli("forget", "--brain", str(old), "--text", secret)
        assert res.returncode == 0 and secret not in res.stdout + res.stderr, res.stderr
        res = cli("query", "--brain", str(old), "rotate the staging keys every quarter")
        assert res.returncode == 0, res.stderr
        assert stop(proc) == 0
    assert secret.encode() not in every_byte(old)
