"""Rewordings of a question for the P4 protocol of ``locomo_learning`` (pure, seeded).

Four kinds, each a deterministic function of the question (and of a seed for ``polite``):

    order    the same words in another order: the clauses reversed when the question has
             a comma, else its words rotated by half
    polite   the question inside a wrapper picked by a seeded rng from ``WRAPPERS``
    drop     the first content word (not one of the search's stopwords) removed
    synonym  the first word found in ``SYNONYMS`` replaced by its everyday synonym

A kind that cannot change a question (no synonym known, nothing left to reorder) gives
None, and the benchmark counts the question as skipped for that kind.
"""

from __future__ import annotations

import random
import re

from workspace_sync.text import STOPWORDS

KINDS = ("order", "polite", "drop", "synonym")

WRAPPERS = (
    "Can you remind me: {q} Thanks.",
    "Quick question: {q}",
    "Sorry to bother you, {lq}",
    "I was wondering, {lq}",
    "Could you help me out? {q}",
    "Hi! {q} Thank you.",
)
"""Polite frames; ``{q}`` is the question, ``{lq}`` the same with a lowercase first word
(when that word is a common one, not a name)."""

SYNONYMS = {
    "kind": "sort",
    "type": "sort",
    "start": "begin",
    "started": "began",
    "begin": "start",
    "make": "create",
    "made": "created",
    "create": "make",
    "created": "made",
    "finish": "complete",
    "finished": "completed",
    "photo": "picture",
    "picture": "photo",
    "kids": "children",
    "children": "kids",
    "child": "kid",
    "friends": "pals",
    "friend": "pal",
    "family": "relatives",
    "favorite": "preferred",
    "recently": "lately",
    "trip": "journey",
    "journey": "trip",
    "store": "shop",
    "shop": "store",
    "movie": "film",
    "movies": "films",
    "film": "movie",
    "book": "novel",
    "books": "novels",
    "car": "vehicle",
    "home": "house",
    "house": "home",
    "job": "position",
    "career": "profession",
    "business": "company",
    "company": "business",
    "money": "cash",
    "big": "large",
    "important": "significant",
    "often": "frequently",
    "like": "enjoy",
    "enjoy": "like",
    "liked": "enjoyed",
    "enjoyed": "liked",
    "love": "adore",
    "loves": "adores",
    "help": "assist",
    "helped": "assisted",
    "recommend": "suggest",
    "advice": "guidance",
    "receive": "obtain",
    "received": "obtained",
    "give": "offer",
    "gave": "offered",
    "inspired": "motivated",
    "choose": "pick",
    "pick": "choose",
    "place": "location",
    "places": "locations",
    "event": "occasion",
    "events": "occasions",
    "party": "celebration",
    "activity": "pastime",
    "activities": "pastimes",
    "hobby": "pastime",
    "hobbies": "pastimes",
    "pet": "animal",
    "pets": "animals",
    "class": "course",
    "accident": "crash",
    "road": "street",
    "city": "town",
    "town": "city",
    "gift": "present",
    "mom": "mother",
    "mother": "mom",
    "dad": "father",
    "father": "dad",
    "happy": "glad",
    "buy": "purchase",
    "bought": "purchased",
    "describe": "characterize",
    "attend": "go to",
    "attended": "went to",
    "share": "post",
    "shared": "posted",
    "hike": "walk",
    "research": "study",
    "researched": "studied",
    "speech": "talk",
    "talk": "chat",
    "move": "relocate",
    "moved": "relocated",
    "current": "present",
    "race": "run",
    "planning": "intending",
    "plan": "intend",
    "visit": "tour",
    "visited": "toured",
    "beach": "seaside",
    "win": "earn",
    "won": "earned",
    "puppy": "pup",
    "said": "told",
    "pursue": "follow",
    "likely": "probably",
}
"""Everyday pairs, by word form (a verb's tense is kept by listing each form)."""

_TOKEN = re.compile(r"\S+")
_CORE = re.compile(r"^(\W*)(.*?)(\W*)$")


def _split(question: str) -> tuple[str, str]:
    """The question without its closing punctuation, and that punctuation."""
    body = question.rstrip()
    end = len(body)
    while end and body[end - 1] in "?.!":
        end -= 1
    return body[:end], body[end:] or "?"


def _is_content(token: str) -> bool:
    core = _CORE.match(token)
    word = core.group(2).lower() if core else token.lower()
    stem = word.split("'")[0]
    return bool(stem) and stem not in STOPWORDS and any(c.isalnum() for c in stem)


def order(question: str) -> str | None:
    """Reversed clauses (split at commas), else the words rotated by half."""
    body, end = _split(question)
    clauses = [c.strip() for c in body.split(",") if c.strip()]
    if len(clauses) > 1:
        out = ", ".join(reversed(clauses)) + end
    else:
        toks = body.split()
        if len(toks) < 2:
            return None
        half = len(toks) // 2
        out = " ".join(toks[half:] + toks[:half]) + end
    return out if out != question else None


def polite(question: str, rng: random.Random) -> str:
    """The question in one of the ``WRAPPERS``."""
    first = question.split(" ", 1)[0]
    core = _CORE.match(first)
    common = core is not None and core.group(2).lower() in STOPWORDS
    lq = question[:1].lower() + question[1:] if common else question
    return rng.choice(WRAPPERS).format(q=question, lq=lq)


def drop(question: str) -> str | None:
    """The question without its first content word (None when it has none, or one)."""
    toks = _TOKEN.findall(question)
    content = [i for i, t in enumerate(toks) if _is_content(t)]
    if len(content) < 2:
        return None
    i = content[0]
    core = _CORE.match(toks[i])
    tail = core.group(3) if core else ""
    rest = toks[:i] + toks[i + 1 :]
    if tail and i > 0:
        rest[i - 1] += tail  # keep a comma or the question mark that closed the word
    if i == 0:
        rest[0] = rest[0][:1].upper() + rest[0][1:]
    return " ".join(rest)


def synonym(question: str) -> str | None:
    """The first word of ``SYNONYMS`` replaced (its capital kept), else None."""
    toks = _TOKEN.findall(question)
    for i, tok in enumerate(toks):
        core = _CORE.match(tok)
        if core is None:
            continue
        lead, word, tail = core.groups()
        new = SYNONYMS.get(word.lower())
        if new is None:
            continue
        if word[:1].isupper():
            new = new[:1].upper() + new[1:]
        toks[i] = lead + new + tail
        return " ".join(toks)
    return None


def reword(kind: str, question: str, rng: random.Random) -> str | None:
    """The question reworded by ``kind`` (one of ``KINDS``), None when it cannot be."""
    match kind:
        case "order":
            return order(question)
        case "polite":
            return polite(question, rng)
        case "drop":
            return drop(question)
        case "synonym":
            return synonym(question)
    raise ValueError(f"unknown rewording {kind!r}")
