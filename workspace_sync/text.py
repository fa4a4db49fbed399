"""Tokenizing: lowercase word tokens and English stopwords, for lexical search with the
Porter2 (Snowball English) stemmer (``terms``), and for the built-in hashed embedder and
the stance of corrections with a light suffix stemmer (``light_stem``: plurals, -ing,
-ed, -ly), which its stored vectors were built with and so stays as it is."""

from __future__ import annotations

import re
from functools import lru_cache

from workspace_sync.porter2 import porter2

_WORD = re.compile(r"[^\W_]+")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves s t d ll m re ve y don doesn didn isn aren wasn weren
    hasn haven hadn won wouldn shouldn couldn mustn o also get got gonna yeah oh hey""".split()
)

_DOUBLE_OK = frozenset("lsz")


TOKENIZER = "porter2-v1"
"""Names what ``terms`` does: an index built by another tokenizer is built again."""


@lru_cache(maxsize=200_000)
def light_stem(word: str) -> str:
    """A light, deterministic English stemmer: ``rolled`` and ``rolling`` -> ``roll``."""
    w = word
    if len(w) <= 3 or w.isdigit():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix, min_len in (("ing", 6), ("ed", 5), ("ly", 6)):
        if w.endswith(suffix) and len(w) >= min_len:
            w = w[: -len(suffix)]
            if len(w) > 2 and w[-1] == w[-2] and w[-1] not in _DOUBLE_OK:
                w = w[:-1]
            break
    return w


def words(text: str) -> list[str]:
    """Lowercase word tokens of ``text``, in order."""
    return _WORD.findall(text.lower())


def terms(text: str) -> list[str]:
    """Porter2-stemmed content terms of ``text`` (stopwords dropped), in order: the
    same at index and at query time."""
    return [porter2(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
