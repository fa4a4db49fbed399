"""Plain BM25 over the chunks ocb itself indexes (LoCoMo evaluate.py in-process adapter).

The workspace is read and cut with OCB's own code (``workspace_sync.scan_workspace`` and
``workspace_sync.chunk_text`` with its default target size, as ``ocb init`` does), so the
candidate set is exactly ocb's nodes; only the ranking differs.  Ranking is textbook
Okapi BM25 (k1=1.2, b=0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5))) over the chunk
text (not the heading breadcrumb), tokens = lowercase ``\\w+`` words, no stemming and no
stopwords: a plain baseline, deliberately without tuning. With ``BM25_TOKENS=ocb`` the
tokens are ocb's own terms (``workspace_sync.text.terms``: stopwords dropped, Porter2 stemming), to
separate what the tokenizer gives from what the graph and vectors give.

Adapter protocol (see the LoCoMo README):
    build(workspace_dir, state_dir)      chunk the workspace, store chunks.json
    query(state_dir, question, k)        [{"source": "path#La-Lb", "text", "score"}], best first
Chunks with a score of 0 (no query word in them) are not returned; ties keep file order.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:  # works from a checkout even without `pip install -e .`
    sys.path.insert(0, str(_ROOT))

from workspace_sync import chunk_text, scan_workspace  # noqa: E402

K1 = 1.2
B = 0.75
_WORD = re.compile(r"\w+")
_CACHE: dict[str, tuple[list[dict], _Index]] = {}


def tokens(text: str) -> list[str]:
    if os.environ.get("BM25_TOKENS") == "ocb":
        from workspace_sync.text import terms

        return terms(text)
    return _WORD.findall(text.lower())


class _Index:
    """Postings per term (doc ids, term frequencies); scores accumulated with numpy."""

    def __init__(self, docs: list[list[str]]) -> None:
        n = len(docs)
        self.n = n
        dl = np.array([len(d) for d in docs], dtype=np.float64)
        avgdl = float(dl.mean()) if n and dl.mean() > 0 else 1.0
        # per-document part of the BM25 denominator: k1 * (1 - b + b * dl / avgdl)
        self.norm = K1 * (1.0 - B + B * dl / avgdl)
        postings: dict[str, dict[int, int]] = {}
        for i, doc in enumerate(docs):
            for t in doc:
                row = postings.setdefault(t, {})
                row[i] = row.get(i, 0) + 1
        self.postings: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
        for t, row in postings.items():
            ids = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            tf = np.fromiter(row.values(), dtype=np.float64, count=len(row))
            idf = math.log(1.0 + (n - len(row) + 0.5) / (len(row) + 0.5))
            self.postings[t] = (ids, tf, idf)

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        s = np.zeros(self.n, dtype=np.float64)
        for t in set(query_tokens):
            p = self.postings.get(t)
            if p is None:
                continue
            ids, tf, idf = p
            s[ids] += idf * tf * (K1 + 1.0) / (tf + self.norm[ids])
        return s


def _chunks_path(state_dir: str) -> str:
    return os.path.join(state_dir, "chunks.json")


def build(workspace_dir: str, state_dir: str) -> None:
    os.makedirs(state_dir, exist_ok=True)
    files, _skipped = scan_workspace(Path(workspace_dir))
    chunks = []
    for f in files:
        for p in chunk_text(f.text, markdown=f.markdown):
            chunks.append(
                {
                    "path": f.path,
                    "start": p.start_line,
                    "end": p.end_line,
                    "heading": p.heading,
                    "text": p.text,
                }
            )
    with open(_chunks_path(state_dir), "w", encoding="utf-8") as fh:
        json.dump(chunks, fh, ensure_ascii=False)
    with open(os.path.join(state_dir, "config.json"), "w", encoding="utf-8") as fh:
        json.dump(
            {
                "k1": K1,
                "b": B,
                "tokens": "workspace_sync.text.terms (stopwords, Porter2 stemming)"
                if os.environ.get("BM25_TOKENS") == "ocb"
                else "lowercase \\w+, no stemming, no stopwords",
                "chunker": "workspace_sync.chunk_text (default target_chars)",
                "n_files": len(files),
                "n_chunks": len(chunks),
            },
            fh,
        )
    _CACHE.pop(os.path.abspath(state_dir), None)


def _load(state_dir: str) -> tuple[list[dict], _Index]:
    key = os.path.abspath(state_dir)
    got = _CACHE.get(key)
    if got is None:
        with open(_chunks_path(state_dir), encoding="utf-8") as fh:
            chunks = json.load(fh)
        got = _CACHE[key] = (chunks, _Index([tokens(c["text"]) for c in chunks]))
    return got


def _source(c: dict) -> str:
    if c["start"] == c["end"]:
        return f"{c['path']}#L{c['start']}"
    return f"{c['path']}#L{c['start']}-L{c['end']}"


def query(state_dir: str, question: str, k: int) -> list[dict]:
    chunks, idx = _load(state_dir)
    k = min(int(k), len(chunks))
    if k <= 0:
        return []
    s = idx.scores(tokens(question))
    order = np.lexsort((np.arange(len(chunks)), -s))[:k]  # score desc, ties in file order
    return [
        {"source": _source(chunks[i]), "text": chunks[i]["text"], "score": float(s[i])}
        for i in order
        if s[i] > 0
    ]
