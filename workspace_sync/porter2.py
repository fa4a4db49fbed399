"""The Porter2 (Snowball English) stemmer, from the published algorithm
(snowballstem.org/algorithms/english/stemmer.html): ``connections``, ``connected`` and
``connecting`` -> ``connect``; ``generously`` -> ``generous``.

Pure Python, deterministic, for lowercase words. In each step the longest matching
suffix is the one that counts: when its condition fails the step does nothing.
"""

from __future__ import annotations

from functools import lru_cache

_VOWELS = frozenset("aeiouy")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LI_ENDING = frozenset("cdeghkmnrt")
_EXCEPTIONS = {
    "skis": "ski",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "idly": "idl",
    "gently": "gentl",
    "ugly": "ugli",
    "early": "earli",
    "only": "onli",
    "singly": "singl",
    "sky": "sky",
    "news": "news",
    "howe": "howe",
    "atlas": "atlas",
    "cosmos": "cosmos",
    "bias": "bias",
    "andes": "andes",
}
_PREFIXES = ("arsen", "commun", "emerg", "gener", "inter", "later", "organ", "past", "univers")
_KEEP_ING = frozenset("even cann inn earr herr out".split())  # evening, inning, outing
_KEEP_EED = frozenset("succ proc exc".split())  # succeed, proceed, exceed
_STEP2 = (
    ("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"),
    ("iveness", "ive"), ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"),
    ("entli", "ent"), ("ation", "ate"), ("alism", "al"), ("aliti", "al"), ("ousli", "ous"),
    ("iviti", "ive"), ("fulli", "ful"), ("enci", "ence"), ("anci", "ance"), ("abli", "able"),
    ("izer", "ize"), ("ator", "ate"), ("alli", "al"), ("bli", "ble"), ("ogi", "og"),
    ("ogist", "og"), ("li", ""),
)  # fmt: skip
_STEP3 = (
    ("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"),
    ("iciti", "ic"), ("ative", ""), ("ical", "ic"), ("ness", ""), ("ful", ""),
)  # fmt: skip
_STEP4 = (
    "ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti",
    "ous", "ive", "ize", "ion", "al", "er", "ic",
)  # fmt: skip


def _region(w: str, start: int) -> int:
    """Where the region after the first non-vowel following a vowel (from ``start``)
    begins: ``len(w)`` when there is none."""
    for i in range(start + 1, len(w)):
        if w[i] not in _VOWELS and w[i - 1] in _VOWELS:
            return i + 1
    return len(w)


def _short_syllable_at_end(w: str) -> bool:
    """A short syllable ends ``w``: consonant, vowel, consonant (not w, x or Y); a
    two-letter word of a vowel and a consonant; or ``past`` (so paste keeps its e)."""
    n = len(w)
    if w.endswith("past"):
        return True
    if n == 2:
        return w[0] in _VOWELS and w[1] not in _VOWELS
    return (
        n >= 3
        and w[-1] not in _VOWELS
        and w[-1] not in "wxY"
        and w[-2] in _VOWELS
        and w[-3] not in _VOWELS
    )


def _has_vowel(s: str) -> bool:
    return any(c in _VOWELS for c in s)


def _longest(w: str, suffixes: tuple[str, ...]) -> str:
    return next((s for s in suffixes if w.endswith(s)), "")


@lru_cache(maxsize=200_000)
def porter2(word: str) -> str:
    """The Porter2 stem of a lowercase word.

    Example:
        >>> [porter2(w) for w in ("connections", "generously", "dying", "skies")]
        ['connect', 'generous', 'die', 'sky']
    """
    if len(word) <= 2:
        return word
    if word in _EXCEPTIONS:
        return _EXCEPTIONS[word]
    w = word[1:] if word.startswith("'") else word
    w = _mark_y(w)
    r1 = next((len(p) for p in _PREFIXES if w.startswith(p)), None)
    if r1 is None:
        r1 = _region(w, 0)
    r2 = _region(w, r1)
    w = _step0(w)
    w = _step1a(w)
    w = _step1b(w, r1)
    w = _step1c(w)
    w = _step2(w, r1)
    w = _step3(w, r1, r2)
    w = _step4(w, r2)
    w = _step5(w, r1, r2)
    return w.replace("Y", "y")


def _mark_y(w: str) -> str:
    """An initial y, and a y after a vowel, as consonant ``Y``."""
    chars = list(w)
    for i, c in enumerate(chars):
        if c == "y" and (i == 0 or chars[i - 1] in _VOWELS):
            chars[i] = "Y"
    return "".join(chars)


def _step0(w: str) -> str:
    s = _longest(w, ("'s'", "'s", "'"))
    return w[: -len(s)] if s else w


def _step1a(w: str) -> str:
    s = _longest(w, ("sses", "ied", "ies", "us", "ss", "s"))
    if s == "sses":
        return w[:-2]
    if s in ("ied", "ies"):
        return w[:-3] + ("i" if len(w) > 4 else "ie")
    if s == "s" and _has_vowel(w[:-2]):
        return w[:-1]
    return w


def _step1b(w: str, r1: int) -> str:
    s = _longest(w, ("eedly", "ingly", "edly", "eed", "ing", "ed"))
    stem = w[: -len(s)] if s else w
    if s in ("eed", "eedly"):
        return stem + "ee" if len(stem) >= r1 and stem not in _KEEP_EED else w
    if s == "ing" and stem in _KEEP_ING:
        return w
    if s == "ing" and len(stem) == 2 and stem[1] == "y" and stem[0] not in _VOWELS:
        return stem[0] + "ie"  # dying, lying, tying
    if not s or not _has_vowel(stem):
        return w
    w = stem
    if w.endswith(("at", "bl", "iz")):
        return w + "e"
    if w.endswith(_DOUBLES):
        return w if len(w) == 3 and w[0] in "aeo" else w[:-1]  # add, egg, odd stay
    if r1 >= len(w) and _short_syllable_at_end(w):
        return w + "e"
    return w


def _step1c(w: str) -> str:
    if len(w) > 2 and w[-1] in "yY" and w[-2] not in _VOWELS:
        return w[:-1] + "i"
    return w


def _step2(w: str, r1: int) -> str:
    for suffix, repl in _STEP2:
        if not w.endswith(suffix):
            continue
        if len(w) - len(suffix) < r1:
            return w
        stem = w[: -len(suffix)]
        if suffix == "ogi" and not stem.endswith("l"):
            return w
        if suffix == "li" and (not stem or stem[-1] not in _LI_ENDING):
            return w
        return stem + repl
    return w


def _step3(w: str, r1: int, r2: int) -> str:
    for suffix, repl in _STEP3:
        if not w.endswith(suffix):
            continue
        start = len(w) - len(suffix)
        if start < r1 or (suffix == "ative" and start < r2):
            return w
        return w[:start] + repl
    return w


def _step4(w: str, r2: int) -> str:
    s = _longest(w, _STEP4)
    if not s or len(w) - len(s) < r2:
        return w
    stem = w[: -len(s)]
    if s == "ion" and not stem.endswith(("s", "t")):
        return w
    return stem


def _step5(w: str, r1: int, r2: int) -> str:
    if w.endswith("e"):
        at = len(w) - 1
        if at >= r2 or (at >= r1 and not _short_syllable_at_end(w[:-1])):
            return w[:-1]
    elif w.endswith("l") and len(w) - 1 >= r2 and w[-2:-1] == "l":
        return w[:-1]
    return w
