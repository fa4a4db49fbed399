"""Tokenizing: Porter2 for lexical search, the light stemmer kept for the hashed
embedder (whose stored vectors it built), and indexes rebuilt when the tokenizer
changes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from ocb.engine import search
from ocb.engine.embed import HashEmbedder
from ocb.engine.search import SearchIndex
from workspace_sync import text
from workspace_sync.porter2 import porter2
from workspace_sync.text import light_stem, terms

WORDS = Path(__file__).parent / "data" / "porter2_words.tsv"


def test_porter2_stems_a_fixed_word_list_as_the_reference_does() -> None:
    rows = [line.split("\t") for line in WORDS.read_text().splitlines() if line[:1] != "#"]
    assert len(rows) > 350
    wrong = [(w, want, porter2(w)) for w, want in rows if porter2(w) != want]
    assert wrong == []


def test_terms_use_porter2_the_same_way_for_documents_and_questions() -> None:
    assert terms("Connections were connected, connecting generously") == [
        "connect", "connect", "connect", "generous",
    ]  # fmt: skip
    assert terms("the universities") == terms("university")
    assert light_stem("connections") == "connection"  # the embedder's, unchanged


@given(st.text("abcdefghijklmnopqrstuvwxyz'", min_size=1, max_size=20))
def test_a_stem_is_never_longer_than_its_word(word: str) -> None:
    got = porter2(word)
    assert len(got) <= len(word) and got == got.lower() and "Y" not in got


def test_the_hashed_embedder_gives_the_vectors_it_always_gave() -> None:
    texts = [
        "how do I roll back a bad deploy",
        "Rolled back lumen-api 3.15.0 after the canary failed",
        "",
        "connections connecting generously",
    ]
    m = HashEmbedder().embed(texts)
    want = "de4585841d16e72b7f6c16e19b068582d65742183115a34b57c7789274617ef5"
    assert hashlib.sha256(m.tobytes()).hexdigest() == want


def test_an_index_built_by_another_tokenizer_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = SearchIndex.from_texts(["a"], ["rollbacks"], np.zeros((1, 2), np.float32))
    index.save(tmp_path / "now.idx")
    monkeypatch.setattr(search, "TOKENIZER", "light-v0")  # as an older ocb wrote it
    index.save(tmp_path / "old.idx")
    monkeypatch.undo()
    assert search.TOKENIZER == text.TOKENIZER
    assert SearchIndex.load(tmp_path / "old.idx") is None
    assert SearchIndex.load(tmp_path / "now.idx") is not None
