"""Lost blobs: doctor names them, ``doctor --repair`` and a re-run of ``init``
regenerate vector blobs byte for byte, and queries answer as before."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import msgspec
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.upkeep.maintain import maintain
from ocb_events.clock import TickClock
from ocb_events.schema import NodesEmbedded, RouteModelTrained
from tests.ocb.upkeep.support import copy_and_ask

QUESTIONS = ["how do I roll back a bad deploy", "can we skip CI for an urgent hotfix"]
runner = CliRunner()


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


def named(brain: Path) -> dict[str, str]:
    """Every blob the log names, by kind."""
    with Brain(brain, writer=False) as b:
        out = {}
        for rec in b.log.read():
            if isinstance(rec.event, NodesEmbedded):
                out[rec.event.blob] = "vectors"
            elif isinstance(rec.event, RouteModelTrained):
                out[rec.event.blob] = "route model"
        return out


def stored(brain: Path) -> dict[str, str]:
    """Every blob file by name, with the sha256 of its bytes."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((brain / "blobs").glob("*/*"))
    }


def answers(brain: Path) -> list[object]:
    with Brain(brain, writer=False) as b:
        return [msgspec.to_builtins(b.query(q, top=8, record=False)) for q in QUESTIONS]


def lose_blobs(brain: Path) -> None:
    shutil.rmtree(brain / "blobs")
    shutil.rmtree(brain / "cache", ignore_errors=True)  # the search index holds vectors too


def test_doctor_names_the_fix_and_repair_regenerates_every_vector_blob(
    built: Path, workspace: Path
) -> None:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        b.query(QUESTIONS[1], chat_id="c1")
        b.inject("CORRECTION", "Never skip CI for hotfixes", chat_id="c1")
        b.inject("TEACHING", "Roll back first, debug second")
        (workspace / "notes" / "glossary.md").unlink()  # its chunk ids come back ...
        b.sync(workspace)
        (workspace / "notes" / "glossary.md").write_text("# Glossary\n\nSLO: a target.\n")
        b.sync(workspace)  # ... naming other text: vectors follow the text of their time
        copy_and_ask(b, workspace)
        report = maintain(b.store, ["merge", "split"], split_over_chars=500, split_chars=250)
        counts = {o.op: o.counts for o in report.ops}
        assert counts["merge"]["merged"] >= 1 and counts["split"]["split"] >= 1
    before, blobs = answers(built), stored(built)
    assert set(blobs) == set(named(built)) and len(blobs) >= 6
    lose_blobs(built)

    code, out, _ = ocb("doctor", "--brain", built)
    assert code == 1
    assert "FAIL  blobs: " in out and "fix: ocb doctor --repair" in out
    code, out, err = ocb("doctor", "--brain", built, "--repair")
    assert (code, err) == (0, "")
    assert out.startswith(f"repair: {len(blobs)} of {len(blobs)} lost blob(s) regenerated")
    assert stored(built) == blobs and all(name == sha for name, sha in blobs.items())
    assert answers(built) == before
    code, out, _ = ocb("doctor", "--brain", built, "--repair")
    assert code == 0 and out.startswith("repair: no lost blobs")


def test_init_again_regenerates_lost_vectors_and_a_damaged_blob_is_replaced(
    built: Path, workspace: Path
) -> None:
    before, blobs = answers(built), stored(built)
    lose_blobs(built)
    code, out, err = ocb("init", "--workspace", workspace, "--brain", built)
    assert (code, err) == (0, "")
    assert out.endswith(f"regenerated {len(blobs)} lost vector blob(s).\n")
    assert stored(built) == blobs and answers(built) == before
    name = sorted(blobs)[0]
    (built / "blobs" / name[:2] / name).write_bytes(b"OCBV damaged")
    code, out, _ = ocb("doctor", "--brain", built)
    assert code == 1 and "does not match its hash" in out
    assert ocb("doctor", "--brain", built, "--repair")[0] == 0
    assert stored(built) == blobs


def test_a_blob_that_cannot_be_reproduced_is_reported_and_never_written(built: Path) -> None:
    with Brain(built) as b:
        (digest,) = named(built)
        seq = b.log.last_seq
        # a blob whose rows are not what its nodes' texts embed to
        fake = NodesEmbedded(
            embedder_id=b.store.embedder().id, blob="ab" * 32, node_ids=("MEMORY.md::0",)
        )
        b.log.append([fake], actor="test", expected_seq=seq)
    shutil.rmtree(built / "cache", ignore_errors=True)
    code, out, _ = ocb("doctor", "--brain", built, "--repair")
    assert code == 1
    assert "unreproducible" in out and "abababababab (vectors" in out
    assert set(stored(built)) == {digest}
