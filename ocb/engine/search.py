"""Seeding: a hybrid of BM25 over stemmed terms and cosine over node vectors.

The index is a derived cache of the graph and vector projections, keyed by the seqs
at which their nodes last changed, stored as one file of raw arrays so a cold process
maps it instead of re-tokenizing. Deleting it is always safe.
"""

from __future__ import annotations

import math
import os
import threading
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from ocb.engine.embed import Matrix
from ocb_events.durable import open_private, private_dir
from projections.graph import Node
from workspace_sync.days import NO_DAY, chunk_day
from workspace_sync.text import TOKENIZER, terms

K1 = 1.2
B = 0.75
_MAGIC = b"OCBIDX02"
_ALIGN = 64


class _Header(msgspec.Struct):
    ids: list[str]
    vocab: list[str]
    arrays: dict[str, tuple[str, list[int], int]]  # name -> (dtype, shape, offset)
    tokenizer: str = ""  # what made the terms (workspace_sync.text.TOKENIZER)


def index_text(node: Node) -> str:
    """What a node is searched by: its heading, text and anchor."""
    return "\n".join(p for p in (node.heading, node.text, node.anchor) if p)


_TERM_IDS: dict[str, int] = {}
_TERMS: list[str] = []
_INTERN = threading.Lock()


@lru_cache(maxsize=32768)
def _counted(text: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """A document's distinct terms (as ids of this process's term table) and their
    counts (read only): a live brain re-indexes after every change, and most of its
    documents did not change."""
    counts = Counter(terms(text))
    with _INTERN:
        for t in counts:
            if t not in _TERM_IDS:
                _TERM_IDS[t] = len(_TERMS)
                _TERMS.append(t)
        ids = [_TERM_IDS[t] for t in counts]
    return np.array(ids, dtype=np.int64), np.array(list(counts.values()), dtype=np.float64)


class SearchIndex:
    """BM25 postings (CSR by term) and a vector matrix over the same node order."""

    def __init__(
        self,
        ids: list[str],
        vocab: dict[str, int],
        ptr: npt.NDArray[np.int64],
        docs: npt.NDArray[np.int32],
        weights: npt.NDArray[np.float32],
        vectors: Matrix,
        days: npt.NDArray[np.int32] | None = None,
    ) -> None:
        self.ids = ids
        self.vocab = vocab
        self.ptr = ptr
        self.docs = docs
        self.weights = weights
        self.vectors = vectors
        self.days = days if days is not None else np.full(len(ids), NO_DAY, dtype=np.int32)
        self._pos: dict[str, int] | None = None
        self._by_doc: (
            tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]] | None
        ) = None

    @property
    def pos(self) -> dict[str, int]:
        """Row of each node id."""
        if self._pos is None:
            self._pos = {n: i for i, n in enumerate(self.ids)}
        return self._pos

    # ------------------------------------------------------------------ build

    @classmethod
    def build(cls, nodes: list[Node], vectors: Matrix) -> SearchIndex:
        """Index ``nodes`` (in the given order; rows of ``vectors`` match), with the
        day each is about (``workspace_sync.days``)."""
        days = [chunk_day(n.path, n.heading, n.text) if n.path else NO_DAY for n in nodes]
        ids, texts = [n.id for n in nodes], [index_text(n) for n in nodes]
        return cls.from_texts(ids, texts, vectors, days)

    @classmethod
    def from_texts(
        cls, ids: list[str], texts: list[str], vectors: Matrix, days: list[int] | None = None
    ) -> SearchIndex:
        """Index documents given as ids and texts (rows of ``vectors`` match; ``days``:
        the day each is about, none by default). Term ids follow the terms' sorted
        order."""
        docs = [_counted(t) for t in texts]
        sizes = np.array([len(g) for g, _ in docs], dtype=np.int64)
        g = np.concatenate([g for g, _ in docs]) if docs else np.zeros(0, dtype=np.int64)
        tf = np.concatenate([c for _, c in docs]) if docs else np.zeros(0, dtype=np.float64)
        d = np.repeat(np.arange(len(docs), dtype=np.int32), sizes)
        lengths = np.bincount(d, weights=tf, minlength=len(docs))
        present = np.unique(g)
        names = [_TERMS[i] for i in present.tolist()]
        order = sorted(range(len(names)), key=names.__getitem__)
        vocab = {names[i]: k for k, i in enumerate(order)}
        local = np.zeros(int(present[-1]) + 1 if len(present) else 0, dtype=np.int64)
        local[present[order]] = np.arange(len(order), dtype=np.int64)
        t = local[g]
        avg = float(lengths.mean()) if len(lengths) and lengths.mean() > 0 else 1.0
        # d grows along the postings: a stable sort by term orders them by (term, doc)
        by = np.argsort(t, kind="stable")
        t, d, tf = t[by], d[by], tf[by]
        df = np.bincount(t, minlength=len(vocab)).astype(np.float64)
        n = max(1, len(ids))
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        norm = K1 * (1 - B + B * lengths[d] / avg) if len(d) else np.zeros(0)
        w = (idf[t] * tf * (K1 + 1) / (tf + norm)).astype(np.float32)
        ptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df.astype(np.int64), out=ptr[1:])
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        on = np.asarray(days, dtype=np.int32) if days is not None else None
        return cls(ids, vocab, ptr, d, w, vecs, on)

    # ------------------------------------------------------------------ search

    def lexical(self, query: str) -> npt.NDArray[np.float32]:
        """BM25 score of every node for ``query``."""
        scores = np.zeros(len(self.ids), dtype=np.float32)
        for t in sorted(set(terms(query))):  # one order of float sums in every process
            tid = self.vocab.get(t)
            if tid is None:
                continue
            a, b = int(self.ptr[tid]), int(self.ptr[tid + 1])
            scores[self.docs[a:b]] += self.weights[a:b]
        return scores

    def by_doc(
        self,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The postings by document: (row pointers, term ids, BM25 weights)."""
        if self._by_doc is None:
            n = len(self.ids)
            order = np.argsort(self.docs, kind="stable")
            tids = np.repeat(np.arange(len(self.ptr) - 1, dtype=np.int64), np.diff(self.ptr))
            dptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.docs, minlength=n), out=dptr[1:])
            self._by_doc = (dptr, tids[order], self.weights[order])
        return self._by_doc

    def feedback(
        self, query: str, scores: Matrix, docs: int, width: int
    ) -> npt.NDArray[np.float32]:
        """BM25 scores of the terms that weigh most in the ``docs`` best-scoring rows
        (at most ``width`` terms, the query's own left out), normalised to a best of 1."""
        out = np.zeros(len(self.ids), dtype=np.float32)
        top = [i for i in _best(scores, docs) if scores[i] > 0]
        if not top:
            return out
        dptr, tids, w = self.by_doc()
        acc: dict[int, float] = {}
        best = float(scores[top[0]])
        own = {self.vocab[t] for t in terms(query) if t in self.vocab}
        for d in top:
            a, b = int(dptr[d]), int(dptr[d + 1])
            share = float(scores[d]) / best
            for t, x in zip(tids[a:b].tolist(), w[a:b].tolist(), strict=True):
                if t not in own:
                    acc[t] = acc.get(t, 0.0) + share * x
        for t in sorted(acc, key=lambda t: (-acc[t], t))[:width]:
            a, b = int(self.ptr[t]), int(self.ptr[t + 1])
            out[self.docs[a:b]] += np.float32(acc[t]) * self.weights[a:b]
        top_v = float(out.max())
        return out / top_v if top_v > 0 else out

    def cosine(self, qvec: Matrix) -> npt.NDArray[np.float32]:
        """Cosine of every node's vector with ``qvec`` (rows are unit length)."""
        if self.vectors.shape[0] == 0:
            return np.zeros(0, dtype=np.float32)
        out: npt.NDArray[np.float32] = self.vectors @ qvec
        return out

    def hybrid(
        self, query: str, qvec: Matrix, lexical_weight: float
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """(hybrid, normalised lexical, cosine) scores of every node."""
        lex = self.lexical(query)
        top = float(lex.max()) if len(lex) else 0.0
        lex_n = lex / top if top > 0 else lex
        cos = np.maximum(self.cosine(qvec), np.float32(0.0))
        hyb = (lexical_weight * lex_n + (1 - lexical_weight) * cos).astype(np.float32)
        return hyb, lex_n.astype(np.float32), cos

    # ------------------------------------------------------------------ cache file

    def save(self, path: Path) -> None:
        """Write the index as one file of aligned raw arrays (atomically; a failed
        write leaves no temp file).

        Raises:
            OSError: the disk refused the write.
        """
        arrays: dict[str, npt.NDArray[Any]] = {
            "ptr": self.ptr,
            "docs": self.docs,
            "weights": self.weights,
            "vectors": self.vectors,
            "days": self.days,
        }
        vocab = [""] * len(self.vocab)
        for t, i in self.vocab.items():
            vocab[i] = t
        offsets: dict[str, tuple[str, list[int], int]] = {}
        off = 0
        for name, arr in arrays.items():
            off = math.ceil(off / _ALIGN) * _ALIGN
            offsets[name] = (arr.dtype.str, list(arr.shape), off)
            off += arr.nbytes
        head = msgspec.msgpack.encode(_Header(self.ids, vocab, offsets, TOKENIZER))
        base = math.ceil((len(_MAGIC) + 8 + len(head)) / _ALIGN) * _ALIGN
        private_dir(path.parent)
        tmp = path.with_name(path.name + ".tmp")
        try:
            with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as fh:
                fh.write(_MAGIC + len(head).to_bytes(8, "little") + head)
                for name, arr in arrays.items():
                    fh.seek(base + offsets[name][2])
                    fh.write(np.ascontiguousarray(arr).tobytes())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a cache: nothing else to undo
            raise

    @classmethod
    def load(cls, path: Path) -> SearchIndex | None:
        """The index stored at ``path``, or None when absent or unreadable."""
        try:
            raw = np.memmap(path, dtype=np.uint8, mode="r")
        except (OSError, ValueError):
            return None
        if bytes(raw[: len(_MAGIC)]) != _MAGIC:
            return None
        n = int.from_bytes(bytes(raw[len(_MAGIC) : len(_MAGIC) + 8]), "little")
        start = len(_MAGIC) + 8
        try:
            head = msgspec.msgpack.decode(bytes(raw[start : start + n]), type=_Header)
        except msgspec.DecodeError:
            return None
        if head.tokenizer != TOKENIZER:  # terms of another tokenizer: build it again
            return None
        base = math.ceil((start + n) / _ALIGN) * _ALIGN
        arrs = {}
        for name, (dtype, shape, off) in head.arrays.items():
            count = int(np.prod(shape)) if shape else 1
            if count == 0:  # an empty array may lie past the file's end
                arrs[name] = np.zeros(shape, dtype=np.dtype(dtype))
                continue
            try:
                a = np.frombuffer(raw, dtype=np.dtype(dtype), count=count, offset=base + off)
            except (TypeError, ValueError):  # a damaged or truncated file
                return None
            arrs[name] = a.reshape(shape)
        if "days" not in arrs:  # written before chunks had days: build it again
            return None
        vocab = {t: i for i, t in enumerate(head.vocab)}
        got = [arrs[k] for k in ("ptr", "docs", "weights", "vectors", "days")]
        return cls(head.ids, vocab, *got)


class Seeding(msgspec.Struct, frozen=True):
    """How a question seeds a walk: every index row ranked by its hybrid score (best
    first, positive scores only, at most ``max_seeds + top + 8``), the rows chosen as
    seeds, and the scores by row (hybrid, lexical, cosine)."""

    ranked: list[int]
    chosen: list[int]
    hybrid: Matrix
    lexical: Matrix
    cosine: Matrix

    @property
    def best(self) -> float:
        return float(self.hybrid[self.ranked[0]]) if self.ranked else 0.0


def _best(scores: npt.NDArray[np.float32], k: int) -> list[int]:
    """The rows of the ``k`` best scores, best first (ties by row)."""
    if k <= 0 or not len(scores):
        return []
    k = min(k, len(scores))
    part = np.argpartition(-scores, k - 1)[:k]
    return sorted(part.tolist(), key=lambda i: (-float(scores[i]), i))


def _top(index: SearchIndex, scores: Matrix, want: int) -> list[int]:
    """The rows of the ``want`` best scores, positive ones only, best first (ties by id)."""
    if not want:
        return []
    part = np.argpartition(-scores, want - 1)[:want]
    return sorted((int(i) for i in part if scores[i] > 0), key=lambda i: (-scores[i], index.ids[i]))


EXACT_DAY_EDGE = 0.5
"""The most a day next to an exact day a query names gets of the date boost (the day
itself gets all of it)."""


def day_closeness(
    days: npt.NDArray[np.int32], start: int, end: int, slack: int
) -> npt.NDArray[np.float32]:
    """How close each row's day is to the days [``start``, ``end``): 1 inside, falling
    linearly to 0 at ``slack + 1`` days outside; 0 for a row without a day. When the
    window is one day (an exact day: "on Oct 7", "2026-10-07", "yesterday") and some row
    is of that day, the days around it start from ``EXACT_DAY_EDGE`` instead of 1, so
    that day's chunks stand above the week around it (a day without chunks leaves the
    nearest days their whole share)."""
    d = days.astype(np.int64)
    dist = np.where(d < start, start - d, np.where(d >= end, d - end + 1, 0))
    near = np.clip(1.0 - dist / (slack + 1.0), 0.0, 1.0)
    if end - start == 1 and bool(np.any(d == start)):
        near = np.where(dist > 0, EXACT_DAY_EDGE * near, near)
    return np.where(d == NO_DAY, 0.0, near).astype(np.float32)


def choose_seeds(
    index: SearchIndex, query: str, qvec: Matrix, lexical_weight: float, *, max_seeds: int,
    seed_ratio: float, top: int, expand: tuple[int, int, float] = (0, 0, 0.0),
    dated: tuple[int, int, int, float] | None = None, lexical: str | None = None,
) -> Seeding:  # fmt: skip
    """Rank the index for ``query`` (its words matched as ``lexical`` when given, see
    ``DatePhrase.lexical``) and choose up to ``max_seeds`` seeds scoring at least
    ``seed_ratio`` of the best (ties broken by id, so the choice is stable)."""
    text = query if lexical is None else lexical
    hyb, lex, cos = index.hybrid(text, qvec, lexical_weight)
    if dated is not None and dated[3] > 0:
        hyb = (hyb + dated[3] * day_closeness(index.days, *dated[:3])).astype(np.float32)
    if expand[2] > 0:
        hyb = (hyb + expand[2] * index.feedback(text, hyb, expand[0], expand[1])).astype(np.float32)
    ranked = _top(index, hyb, min(len(index.ids), max_seeds + top + 8))
    best = float(hyb[ranked[0]]) if ranked else 0.0
    chosen = [i for i in ranked[:max_seeds] if hyb[i] >= seed_ratio * best]
    return Seeding(ranked, chosen, hyb, lex, cos)


def best_rows(index: SearchIndex, scores: Matrix, k: int, exclude: frozenset[str]) -> list[str]:
    """The ids of the ``k`` best-scoring rows (positive scores only, ties by id) whose
    ids are not in ``exclude``."""
    n = len(index.ids)
    want = min(n, len(exclude) + k)
    while want:
        picked = [index.ids[i] for i in _top(index, scores, want) if index.ids[i] not in exclude]
        picked = picked[:k]
        if len(picked) == k or want == n:
            return picked
        want = min(n, want * 2)
    return []
