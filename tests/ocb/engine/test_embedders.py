"""Each embedder's contract (dimension, float32, unit rows, determinism, batching), the
fused channels' cosine, the specs, and the local model's pinned files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ocb.engine.embed import Embedder, HashEmbedder
from ocb.engine.embedders import FusedEmbedder, embedder_from_spec, embedder_spec
from ocb.engine.minilm import MODEL_ENV, MiniLMEmbedder, model_file
from ocb_events.errors import EmbedderUnavailable, InputError

TEXTS = ["roll back a bad deploy", "", "Priya owns the billing service", "x" * 3000, "ünïcode ok"]


def contract(emb: Embedder) -> np.ndarray:
    got = emb.embed(TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), emb.dim)
    norms = np.linalg.norm(got, axis=1)
    assert np.allclose(norms[norms > 0], 1.0, atol=1e-5)
    assert np.array_equal(emb.embed(TEXTS), got)  # deterministic
    one = np.vstack([emb.embed([t]) for t in TEXTS])
    assert np.allclose(one, got, atol=1e-5)  # batching changes nothing
    assert emb.embed([]).shape == (0, emb.dim)
    return got


def test_the_hashed_embedder_keeps_its_contract() -> None:
    got = contract(HashEmbedder())
    assert not got[1].any()  # no words, a zero row


def test_the_local_model_keeps_its_contract_in_every_process() -> None:
    got = contract(MiniLMEmbedder())
    assert MiniLMEmbedder.dim == 384 and MiniLMEmbedder.id == "minilm-l6-v2-int8"
    code = (
        "import sys, numpy as np; from ocb.engine.minilm import MiniLMEmbedder; "
        f"sys.stdout.buffer.write(MiniLMEmbedder().embed({TEXTS!r}).tobytes())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    assert np.array_equal(np.frombuffer(other, dtype=np.float32).reshape(got.shape), got)
    near = MiniLMEmbedder().embed(["revert a broken release"])[0]
    assert float(near @ got[0]) > float(near @ got[2])  # meaning, not spelling


@settings(max_examples=25)
@given(
    st.lists(st.text("abcdef gh", max_size=20), min_size=2, max_size=5),
    st.floats(0.0, 0.95),
)
def test_a_fused_cosine_is_the_weighted_sum_of_its_channels(texts: list[str], w: float) -> None:
    a, b = HashEmbedder(64), HashEmbedder(32)
    fused = FusedEmbedder(a, b, w, "test")
    got = fused.embed(texts)
    assert fused.dim == 96 and got.dtype == np.float32
    ra, rb = a.embed(texts), b.embed(texts)
    want = w * (ra @ ra.T) + (1 - w) * (rb @ rb.T)
    assert np.allclose(got @ got.T, want, atol=1e-5)


def test_specs_name_their_embedders() -> None:
    assert embedder_from_spec("hash").id == "hash-ngram-v1-d384"
    assert embedder_spec(embedder_from_spec("hash")) == ""
    fused = embedder_from_spec("minilm")
    assert fused.id == "hash-ngram-v1-d384+minilm-l6-v2-int8@0.5" and fused.dim == 768
    assert embedder_spec(fused) == "minilm"
    assert embedder_from_spec("minilm@0.3").id.endswith("@0.3")
    for bad in ("bert", "minilm@1.5", "minilm@x", "minilmx"):
        with pytest.raises(InputError) as err:
            embedder_from_spec(bad)
        assert "minilm" in err.value.hint


def test_a_model_file_that_is_not_the_pinned_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = tmp_path / "model.onnx"
    shutil.copyfile(model_file(), wrong)
    with open(wrong, "ab") as fh:
        fh.write(b"\0")
    monkeypatch.setenv(MODEL_ENV, str(wrong))
    with pytest.raises(EmbedderUnavailable) as err:
        MiniLMEmbedder().embed(["a"])
    assert (
        str(wrong) in err.value.message and "not the pinned 8199be6f699a395f" in err.value.message
    )
    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "missing.onnx"))
    with pytest.raises(EmbedderUnavailable, match="does not exist"):
        MiniLMEmbedder().embed(["a"])
    monkeypatch.delenv(MODEL_ENV)
    right = tmp_path / "right.onnx"
    shutil.copyfile(model_file(), right)
    monkeypatch.setenv(MODEL_ENV, str(right))  # a local copy of the same file
    assert np.allclose(MiniLMEmbedder().embed(["a"]), MiniLMEmbedder(model_file()).embed(["a"]))
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copyfile(right, folder / "model.onnx")
    monkeypatch.setenv(MODEL_ENV, str(folder))  # or the directory that holds it
    assert model_file() == folder / "model.onnx"


def test_the_models_row_inside_a_fused_row_is_what_the_model_gives() -> None:
    fused = embedder_from_spec("minilm")
    assert isinstance(fused, FusedEmbedder)
    texts = ["how do I roll back a bad deploy", "who holds the pager this week"]
    for row, alone in zip(fused.embed(texts), fused.second.embed(texts), strict=True):
        assert np.allclose(fused.second_of(row), alone, atol=1e-6)
