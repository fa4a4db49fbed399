"""The BM25 index: its scores are the textbook formula over the documents' terms,
whatever order this process met the terms in, and a saved index loads back the same."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ocb.engine.search import K1, B, SearchIndex
from workspace_sync.text import terms

WORDS = "deploy rollback cache billing alert queue schema token owner runbook pager the of".split()
doc = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)


def bm25(texts: list[str], query: str) -> list[float]:
    """BM25 of each document for ``query``, straight from the definition."""
    counts = [Counter(terms(t)) for t in texts]
    n = max(1, len(texts))
    avg = sum(sum(c.values()) for c in counts) / len(texts) if texts else 0.0
    avg = avg if avg > 0 else 1.0
    out = []
    for c in counts:
        length = sum(c.values())
        score = 0.0
        for t in set(terms(query)):
            tf = c.get(t, 0)
            if not tf:
                continue
            df = sum(1 for other in counts if t in other)
            idf = math.log1p((n - df + 0.5) / (df + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg))
        out.append(score)
    return out


def build(texts: list[str]) -> SearchIndex:
    ids = [f"n{i}" for i in range(len(texts))]
    return SearchIndex.from_texts(ids, texts, np.zeros((len(texts), 2), np.float32))


@settings(max_examples=80)
@given(st.lists(doc, max_size=8), st.lists(doc, max_size=4), doc)
def test_scores_are_bm25_whatever_terms_came_first(
    texts: list[str], before: list[str], query: str
) -> None:
    build(before[::-1])  # other documents met first: the process's term table grows
    index = build(texts)
    got = index.lexical(query)
    assert np.allclose(got, bm25(texts, query), rtol=1e-5, atol=1e-6)
    names = sorted(index.vocab)
    assert [index.vocab[t] for t in names] == list(range(len(names)))
    assert set(names) == {t for x in texts for t in terms(x)}


@settings(max_examples=30)
@given(st.lists(doc, max_size=8))
def test_an_index_is_the_same_built_twice_and_loaded_back(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str]
) -> None:
    a, b = build(texts), build(list(texts))
    path: Path = tmp_path_factory.mktemp("idx") / "i.idx"
    a.save(path)
    c = SearchIndex.load(path)
    assert c is not None
    for x in (b, c):
        assert x.ids == a.ids and x.vocab == a.vocab
        for name in ("ptr", "docs", "weights", "vectors"):
            assert np.array_equal(getattr(x, name), getattr(a, name)), name
