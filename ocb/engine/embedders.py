"""Choosing an embedder by a spec, and fusing a model's vectors with the hashed ones.

Specs: ``hash`` (the built-in ``HashEmbedder``, the default), ``minilm`` (the local
model of the ``embed`` extra), ``http:<url>?model=<name>...`` (``ocb.engine.http_embed``).
A model is used *alongside* the hashed vectors: a ``FusedEmbedder`` row is
``[sqrt(w) * hash_row, sqrt(1 - w) * model_row]``, each part unit length, so the row is
unit length and its cosine with a query's row is ``w * cos_hash + (1 - w) * cos_model``:
search, traversal and the vector blobs need no change. A brain records the spec and the
id of the embedder that built it (``EmbedderConfigured``) and refuses another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ocb.engine.embed import Embedder, HashEmbedder, Matrix, builtin_embedder
from ocb_events.errors import InputError

HASH_WEIGHT = 0.5
"""The hashed channel's share of a fused cosine (the model's is the rest)."""


class FusedEmbedder:
    """Two embedders' rows side by side, weighted so cosines add (see the module's doc)."""

    def __init__(self, first: Embedder, second: Embedder, weight: float, spec: str) -> None:
        self.first, self.second, self.weight, self.spec = first, second, weight, spec
        self._a, self._b = math.sqrt(weight), math.sqrt(1.0 - weight)

    @property
    def id(self) -> str:
        return f"{self.first.id}+{self.second.id}@{self.weight:g}"

    @property
    def dim(self) -> int:
        return self.first.dim + self.second.dim

    def second_of(self, row: Matrix) -> Matrix:
        """The second embedder's row (unit length, unless zero) inside a fused ``row``:
        what ``second.embed`` gives for the same text, without embedding it again."""
        part = row[self.first.dim :]
        norm = float(np.linalg.norm(part))
        return (part / np.float32(norm)).astype(np.float32) if norm > 0 else part

    def embed(self, texts: Sequence[str]) -> Matrix:
        """The two channels' rows, concatenated and weighted (unit length unless both
        parts are zero)."""
        a = self.first.embed(texts)
        b = self.second.embed(texts)
        return np.hstack([a * np.float32(self._a), b * np.float32(self._b)]).astype(np.float32)


def _bad(spec: str) -> InputError:
    return InputError(
        f"unknown embedder {spec!r}",
        "use hash (the default), minilm (the optional embed extra), or "
        "http:<url>?model=<name>, e.g. `embedder=minilm`",
        param="embedder",
    )


def embedder_from_spec(spec: str, *, cache_dir: Path | None = None) -> Embedder:
    """The embedder a spec names (``hash``, ``minilm[@w]``, ``http:...``).

    Raises:
        InputError: an unknown or malformed spec.
    """
    spec = spec.strip()
    if spec in ("", "hash"):
        return HashEmbedder()
    builtin = builtin_embedder(spec)
    if builtin is not None:
        return builtin
    weight = HASH_WEIGHT
    if spec.startswith("minilm"):
        name, _, w = spec.partition("@")
        if name != "minilm":
            raise _bad(spec)
        if w:
            try:
                weight = float(w)
            except ValueError:
                raise _bad(spec) from None
            if not 0.0 <= weight < 1.0:
                raise InputError(
                    f"the hashed share of {spec!r} must be in [0, 1), got {weight}",
                    "e.g. `embedder=minilm@0.5`",
                    param="embedder",
                )
        from ocb.engine.minilm import MiniLMEmbedder  # on use: onnxruntime is optional

        model: Embedder = MiniLMEmbedder()
    elif spec.startswith("http:"):
        from ocb.engine.http_embed import HttpEmbedder

        model = HttpEmbedder.from_spec(spec, cache_dir=cache_dir)
    else:
        raise _bad(spec)
    return FusedEmbedder(HashEmbedder(), model, weight, _recorded_spec(spec, model))


def _recorded_spec(spec: str, model: Embedder) -> str:
    """The spec to record: an HTTP embedder's own (with its dimension)."""
    got = getattr(model, "spec", None)
    return got if isinstance(got, str) and spec.startswith("http:") else spec


def embedder_spec(embedder: Embedder) -> str:
    """The spec that rebuilds ``embedder`` ("" for the built-in hashed one)."""
    got = getattr(embedder, "spec", "")
    return got if isinstance(got, str) else ""
