"""Tokenizing for lexical search and the built-in embedder: lowercase word tokens,
English stopwords removed, and a light suffix stemmer (plurals, -ing, -ed, -ly)."""

from __future__ import annotations

import re
from functools import lru_cache

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


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
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
    """Stemmed content terms of ``text`` (stopwords dropped), in order."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
