"""Forgetting content for good: no byte of the brain holds it afterwards, the history
still verifies (seqs, checksums, hash chain), and what was erased is itself recorded."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.upkeep.forget import CONTENT, MARKER
from ocb_events import parts, schema
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import ContentForgotten, FactsRecorded
from replay import PROJECTIONS, rebuild

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
        b.load(*PROJECTIONS)
        for name in PROJECTIONS:
            assert PROJECTIONS[name].snapshot(b.state(name)) == PROJECTIONS[name].snapshot(
                full[name]
            )
        node = next(n for n in b.graph.nodes.values() if MARKER in n.text)
        again = b.embedder().embed(["\n".join(p for p in (node.heading, node.text) if p)])
        assert (b.vectors_of([node.id]) == again).all(), "the vector is of the redacted text"
        assert b.query("staging password rotate demo").results
    for command in ("verify", "doctor"):
        code, out, _ = ocb(command, "--brain", path)
        assert code == 0, out


def test_forgetting_a_file_erases_every_version_and_a_dry_run_changes_nothing(
    leaky: tuple[Path, Path],
) -> None:
    _, path = leaky
    before = every_byte(path)
    code, out, _ = ocb("forget", "--brain", path, "--file", "notes/access.md", "--dry-run")
    assert code == 0 and out.startswith("would forget file notes/access.md in 2 record(s)")
    assert every_byte(path) == before
    code, out, _ = ocb("forget", "--brain", path, "--file", "notes/access.md")
    assert code == 0 and "recorded as content_forgotten" in out
    with Brain(path) as b:
        texts = [n.text for n in b.graph.nodes.values() if n.path == "notes/access.md"]
        assert texts and all(t == MARKER for t in texts)
        deploy = [n.text for n in b.graph.nodes.values() if n.path == "runbooks/deploy.md"]
        assert deploy and MARKER not in "".join(deploy), "other files stay as they were"


def test_forgetting_a_moved_file_erases_its_versions_under_every_path_it_had(
    leaky: tuple[Path, Path],
) -> None:
    workspace, path = leaky
    (workspace / "notes" / "access.md").rename(workspace / "notes" / "secret.md")
    with Brain(path) as b:
        assert b.sync(workspace).files_moved == 1
    code, out, err = ocb("forget", "--brain", path, "--file", "notes/secret.md", "--json")
    assert code == 0, err
    assert msgspec.json.decode(out)["still_in_workspace"] == ["notes/secret.md"]
    with Brain(path) as b:
        texts = [n.text for n in b.graph.nodes.values() if n.path == "notes/secret.md"]
        assert texts and all(t == MARKER for t in texts), "recorded under notes/access.md"


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
        b.forget(seq=seq)
        assert list(b.log.read(seq, seq))[0].event.query == MARKER  # type: ignore[union-attr]
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


STRUCTURAL = {
    "id", "node_id", "node_ids", "path", "content_hash", "text_hash", "removed", "trace_id",
    "chat_id", "fired", "vetoed", "fired_ids", "request_id", "source", "target", "targets",
    "kind", "tier", "key", "cause", "rule", "embedder_id", "blob", "features", "kept",
    "absorbed", "node", "chosen", "followed", "mode", "stop_reason", "fact_id",
    "change", "supporting", "contradicting", "priority", "teacher",
    "op", "root", "what", "segment", "actor", "evidence", "day", "used", "route", "route_mode",
    "route_id", "old_path", "spec",
}  # fmt: skip
"""String fields that name things (ids, paths, hashes, kinds), not free text."""


def test_every_free_text_field_of_every_event_is_known_to_forget() -> None:
    for _, cls in inspect.getmembers(schema, inspect.isclass):
        ours = (schema.__name__, parts.__name__)  # the events and the parts nested in them
        if not (issubclass(cls, msgspec.Struct) and cls.__module__ in ours):
            continue
        hints = typing.get_type_hints(cls)
        strs = {f for f in cls.__struct_fields__ if "str" in repr(hints[f])}
        content = set(CONTENT.get(cls, ()))
        assert content <= strs, cls
        unknown = strs - content - STRUCTURAL
        assert not unknown, f"{cls.__name__}: classify {sorted(unknown)} in ocb.upkeep.forget"
