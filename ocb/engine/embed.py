"""Embedders: the protocol and the built-in, model-free hashed n-gram embedder.

A brain records the id of the embedder that built its vectors and refuses to mix
vector spaces; any object with ``id``, ``dim`` and ``embed`` can be plugged in.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import MutableMapping, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from workspace_sync.text import STOPWORDS, light_stem, words

Matrix = npt.NDArray[np.float32]
_VEC_HEAD = struct.Struct("<4sII")


def pack_matrix(m: Matrix) -> bytes:
    """A float32 matrix as blob bytes: magic, rows, dim, little-endian data."""
    m = np.ascontiguousarray(m, dtype="<f4")
    return _VEC_HEAD.pack(b"OCBV", m.shape[0], m.shape[1]) + m.tobytes()


def unpack_matrix(data: bytes) -> Matrix:
    """The matrix of a vector blob."""
    magic, rows, dim = _VEC_HEAD.unpack_from(data, 0)
    if magic != b"OCBV":
        raise ValueError("not a vector blob")
    arr = np.frombuffer(data, dtype="<f4", count=rows * dim, offset=_VEC_HEAD.size)
    return arr.reshape(rows, dim).astype(np.float32, copy=False)


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows of length ``dim``."""

    @property
    def id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Matrix: ...


class HashEmbedder:
    """Hashed features of stemmed words, word bigrams and character trigrams.

    Deterministic across processes and machines (crc32, not Python's ``hash``), with
    no model download. Trigrams make near spellings (``rollback``/``roll back``,
    ``deploys``/``deployment``) land close together.

    Example:
        >>> HashEmbedder(dim=64).embed(["roll back a deploy"]).shape
        (1, 64)
    """

    def __init__(self, dim: int = 384) -> None:
        self._dim = dim
        self._word_cache: dict[str, tuple[list[int], list[float]]] = {}

    @property
    def id(self) -> str:
        return f"hash-ngram-v1-d{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _feature(self, key: str) -> tuple[int, float]:
        h = zlib.crc32(key.encode("utf-8"))
        return h % self._dim, (1.0 if (h >> 31) & 1 else -1.0)

    def _word_features(self, word: str) -> tuple[list[int], list[float]]:
        got = self._word_cache.get(word)
        if got is not None:
            return got
        idx: list[int] = []
        val: list[float] = []
        b, s = self._feature("w:" + light_stem(word))
        idx.append(b)
        val.append(s)
        padded = f"<{word}>"
        grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
        share = 0.6 / max(1, len(grams))
        for g in grams:
            b, s = self._feature("c:" + g)
            idx.append(b)
            val.append(s * share)
        if len(self._word_cache) < 500_000:
            self._word_cache[word] = (idx, val)
        return idx, val

    def _one(self, text: str) -> Matrix:
        toks = [w for w in words(text) if w not in STOPWORDS]
        idx: list[int] = []
        val: list[float] = []
        for w in toks:
            i, v = self._word_features(w)
            idx.extend(i)
            val.extend(v)
        for a, b in zip(toks, toks[1:], strict=False):
            j, s = self._feature("b:" + light_stem(a) + " " + light_stem(b))
            idx.append(j)
            val.append(0.5 * s)
        if not idx:
            return np.zeros(self._dim, dtype=np.float32)
        vec = np.bincount(np.asarray(idx), weights=np.asarray(val), minlength=self._dim)
        vec = np.sign(vec) * np.log1p(np.abs(vec))
        norm = float(np.linalg.norm(vec))
        return (vec / norm if norm > 0 else vec).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Matrix:
        """L2-normalised vectors, one row per text (a zero row for a text with no words)."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self._one(t)
        return out


_HASH_ID = re.compile(r"^hash-ngram-v1-d(\d+)$")


def builtin_embedder(embedder_id: str) -> Embedder | None:
    """The built-in embedder with this id, if it is one."""
    m = _HASH_ID.match(embedder_id)
    return HashEmbedder(int(m.group(1))) if m else None


def chunk_input(heading: str, text: str) -> str:
    """What a chunk's vector is embedded from: its heading breadcrumb, then its text."""
    return "\n".join(p for p in (heading, text) if p)


class Ahead:
    """An embedder that takes the vectors of texts embedded ahead of time (``vectors``,
    by text) and embeds the others with ``inner``, whose id, dimension and spec it
    shows. A daemon embeds a big file's chunks off its writer thread, and the sync
    decided on the writer takes them from here. Each vector is dropped from
    ``vectors`` once it is taken, so a big file's vectors are not held twice.

    Example:
        >>> inner = HashEmbedder(dim=8)
        >>> ahead = Ahead(inner, {"x": inner.embed(["x"])[0]})
        >>> bool((ahead.embed(["x", "y"]) == inner.embed(["x", "y"])).all())
        True
    """

    def __init__(
        self, inner: Embedder, vectors: MutableMapping[str, npt.NDArray[np.float32]]
    ) -> None:
        self.inner = inner
        self.vectors = vectors

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def spec(self) -> object:
        return getattr(self.inner, "spec", "")

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rest = [i for i, t in enumerate(texts) if t not in self.vectors]
        for i, t in enumerate(texts):
            if t in self.vectors:
                out[i] = self.vectors[t]
        for t in texts:
            self.vectors.pop(t, None)
        if rest:
            out[rest] = self.inner.embed([texts[i] for i in rest])
        return out
