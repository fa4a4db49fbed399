"""Reading a text into clauses for the stance of a correction (``ocb.engine.stance``):
each clause's terms, its polarity, its condition and exception, and which of its terms
only report what happened.

* **Clauses.** Text is cut into lines (a paragraph's soft-wrapped lines joined),
  sentences, and clauses at ``;``, ``:`` (after a
  clause that judges, "Marco was wrong: X", which then only introduces X; else what
  follows elaborates the clause before and stays in it), a dash, ``but``, ``because``,
  ``although``, ``whereas``, ``, as``, ``instead of``, ``rather than`` and a ``, not``
  that sets one thing against another ("cancel the DDL, not the reader"). A clause's
  terms are its Porter2 stems (the search index's own) without stopwords, cues, fillers
  ("even", "honestly", "please", "still" ...), modals ("must", "may", "need") and words
  that only point at a source ("note", "advice", "said", dates); CamelCase
  is split, a number is joined to its unit ("10-minute" and "10 minutes" are one term)
  and the old value of a change ("from 10 to 30") is left out.
* **Polarity.** A clause is *negated* when it holds an odd number of negation cues
  (``not``, ``never``, ``no``, ``n't``, ``without``, ``nobody`` ... and the withdrawals
  ``wrong``, ``withdrawn``, ``superseded``, ``removed``, ``forget``, ``ignore`` ...): "it is
  not true that we never skip CI" and "do not ship without a flag" are positive, and
  "no longer X, not even Y" says its negation once. A ``nothing`` or ``nobody`` right
  after ``that``/``which``/``who`` is the subject of a relative clause ("endpoints that
  nothing calls"), not a negation of the claim. What follows ``instead of`` or ``rather
  than`` is negated; a trailing ``instead`` or ``rather`` endorses its clause ("scale
  thumbd instead" is advice to scale thumbd). A clause that judges without saying
  anything ("that guidance is withdrawn and must not be followed", "not wrong") gives its
  verdict to the clause next to it (the one before, else the one after).
* **Conditions and exceptions.** A clause after ``if``, ``when``, ``whenever`` (or one
  opening a sentence with ``after``, ``before``, ``once``, ``while``) is the condition of
  its claim: said along with it, not needed to contradict it. One after ``unless`` is an
  exception: a text that states it does not oppose the claim.
* **Reports.** A term only in a past form ("skipped") is reported, not advised; so are
  all terms of a clause with a past auxiliary ("had been running", "were allowed") or a
  pronoun and a past form ("we used", "he spent"), and of a line that tells what
  happened: a ``B`` (experience) fact or a timeline entry ("- 17:35 ...").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

import msgspec

from workspace_sync.porter2 import porter2
from workspace_sync.text import STOPWORDS

NEGATIONS = frozenset("no not never nor neither cannot without nobody none nothing nowhere".split())
"""Cues that negate the clause they are in."""
WITHDRAWALS = frozenset(
    """wrong incorrect false untrue mistaken invalid withdrawn withdraw withdraws
    superseded supersede supersedes reversed rejected forbidden prohibited obsolete
    outdated deprecated cancelled canceled revoked retracted removed removal forget ignore
    disregard""".split()
)
"""Cues that take back what their clause states (or, alone, the clause next to it)."""
ENDORSEMENTS = frozenset("right correct true valid instead rather".split())
"""Cues that state their clause (or, alone, the clause next to it) as it is."""
_VERDICTS = frozenset("right correct valid".split())  # "X is right": X is a source
_OPERATORS = frozenset("instead rather".split())
_BE = (["is"], ["are"], ["was"], ["were"], ["be"], ["it"], ["not"])  # before a verdict
FILLERS = frozenset(
    """even ever still just really actually basically honestly seriously definitely
    absolutely obviously clearly simply truly literally anyway anymore please um uh
    fyi btw frankly certainly surely completely entirely quite super totally
    whatsoever whatever always already yes ok okay clear period include included
    including must may might shall ought need needs needed would note notes advice idea
    suggestion suggestions suggest suggests suggested guidance opinion say says said
    tell told follow follows followed runbook runbooks""".split()
)
"""Words that carry no claim: fillers and intensifiers, modals, and words that only
point at a source."""
_RELATIVE = frozenset("that which who".split())
_QUANTIFIERS = frozenset("nothing nobody none".split())
_AUXILIARY = frozenset("was were had did been wasn't weren't hadn't didn't".split())
_CONTRAST = ("instead of", "rather than")
_CONDITION = ("if", "when", "whenever")
_HEADS = (*_CONTRAST, *_CONDITION, "unless")
_LEADS = frozenset("after before once while".split())
"""Words that open a head clause of time ("After the export was confirmed, ...")."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_SPLIT = re.compile(
    r"\s*(?:(;)|(:)(?=\s|$)|\s[-–—]+\s|,\s*(?=(?:not|never)\b(?!\s+even\b))"
    r"|,\s*(?=(?:as|they|it|we|he|she|you)\b)"
    r"|\b(but|because|unless|although|whereas|instead of|rather than|if|when|whenever)\b)\s*",
    re.IGNORECASE,
)
_BLOCK = re.compile(r"\s*(?:#|[-*+]\s|\d+[.)]\s|\||```)")
_TRAILING = re.compile(r",\s*([^,]*\b(?:instead|rather))\W*$", re.IGNORECASE)
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_OLD_VALUE = re.compile(r"\bfrom\s+\d[\w.,:%]*\s+(?=to\b)", re.IGNORECASE)  # "from 10 to 30"
_UNITS = frozenset(
    "ms sec secs second seconds min mins minute minutes hour hours day days week weeks "
    "month months percent".split()
)
_PRONOUNS = frozenset("i we you he she it they".split())
_TOLD = re.compile(r"^\s*[-*+]\s+(?:B(?:\([^)]*\))*(?=[\s:])|\d{1,2}:\d{2}\b)")
"""A line that tells what happened: a ``B`` (experience) fact, a timeline entry."""
_IRREGULAR = frozenset(
    """went came took made spent began ran gave saw wrote built sent kept felt thought
    brought caught chose drew drove fell flew forgot froze grew knew led paid rose spoke
    stood stole taught threw understood woke wore won became broke held""".split()
)
"""Past forms that do not end in -ed."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_TOKEN = re.compile(r"[^\W_]+(?:['’][a-z]+)?")


class Unit(msgspec.Struct, frozen=True):
    """A clause: its terms, those it advises rather than only reports, whether it is
    negated, the terms of its condition (``if``, ``when``: said along with it, not
    needed to contradict it) and of its exception (``unless``: a text stating them does
    not oppose it), and its terms in text order."""

    terms: frozenset[str]
    advised: frozenset[str]
    negated: bool
    condition: frozenset[str] = frozenset()
    excused: frozenset[str] = frozenset()
    order: tuple[str, ...] = ()


class _Clause(msgspec.Struct):
    text: str
    marker: str  # the connective before it ("" at the start of a sentence)
    terms: set[str] = msgspec.field(default_factory=set)
    advised: set[str] = msgspec.field(default_factory=set)
    order: list[str] = msgspec.field(default_factory=list)  # the terms in text order
    cues: int = 0  # negation cues, for the parity
    judged: bool = False  # holds a withdrawal or endorsement cue
    pointer: bool = False  # "the runbook is right": points at a source, claims nothing
    condition: set[str] = msgspec.field(default_factory=set)
    excused: set[str] = msgspec.field(default_factory=set)


def _past(word: str) -> bool:
    return word in _IRREGULAR or (word.endswith("ed") and porter2(word) != word)


def _words(text: str) -> list[str]:
    """Lowercase words, camel case split, dates and old values ("from 10 to") left out,
    a number joined to its unit ("10-minute", "10 minutes": ``10minut``)."""
    text = _OLD_VALUE.sub(" ", _DATE.sub(" ", text))
    ws = _TOKEN.findall(_CAMEL.sub(" ", text).lower())
    out: list[str] = []
    for w in ws:
        if w in _UNITS and out and out[-1].isdigit():
            out[-1] += porter2(w)
        else:
            out.append(w)
    return out


def _read(c: _Clause) -> _Clause:
    """Fill in a clause's terms and cues from its text."""
    ws = _words(c.text)
    # "had been running", "we used": what happened
    report = any(w in _AUXILIARY for w in ws) or any(
        w in _PRONOUNS and _past(n) for w, n in zip(ws, ws[1:], strict=False)
    )
    for i, w in enumerate(ws):
        base = re.split("['’]", w)[0]
        if len(base) < 2 or base == "not" and ws[i + 1 : i + 2] == ["even"] and c.cues:
            continue  # "no longer ..., not even X" says it once
        if w.endswith(("n't", "n’t")) or base in NEGATIONS or base in WITHDRAWALS:
            relative = base in _QUANTIFIERS and i > 0 and ws[i - 1] in _RELATIVE
            c.cues += not relative
            c.judged |= base in WITHDRAWALS
        elif base in ENDORSEMENTS and (base in _OPERATORS or ws[i - 1 : i] in _BE):
            c.judged = True
            c.pointer |= base in _VERDICTS
        elif base == "longer" and ws[i - 1 : i] == ["no"]:
            continue
        elif base not in STOPWORDS and base not in FILLERS:
            term = porter2(base)
            c.terms.add(term)
            c.order.append(term)
            if not report and not _past(base):
                c.advised.add(term)
    return c


def _parts(sentence: str) -> Iterator[tuple[str, str]]:
    """(text, the connective before it) of each part of a sentence."""
    pos, marker = 0, ""
    for m in _SPLIT.finditer(sentence):
        yield sentence[pos : m.start()], marker
        pos = m.end()
        marker = next((g for g in m.groups() if g), ",").lower()
    yield sentence[pos:], marker


def _split(sentence: str) -> list[_Clause]:
    """A sentence's clauses; a head clause ("instead of Y, X", "when C, X") at the start
    of a sentence or after ``;`` or ``:`` ends at its first comma."""
    out: list[_Clause] = []
    lead, start = "", True  # the separator before an empty part; at a clause start
    for text, marker in _parts(sentence):
        if not _TOKEN.search(text):  # empty, or a bullet's dash
            lead, start = marker, start or marker in ("", ";", ":")
            continue
        lead_word = _words(text[:12])[:1]
        if start and "," in text and (marker in _HEADS or set(lead_word) & _LEADS):
            head, tail = text.split(",", 1)
            kind = marker if marker in _HEADS else "when"  # a time head is a condition
            out += [_Clause(head, kind), _Clause(tail, lead)]
        else:
            m = _TRAILING.search(text)  # "do not X, A instead": A is a clause of its own
            if m is not None:
                out += [_Clause(text[: m.start()], marker), _Clause(m.group(1), ",")]
            else:
                out.append(_Clause(text, marker))
        lead, start = "", False
    return [_read(c) for c in out]


def _verdict(c: _Clause) -> int:
    """The flip a clause that judges without content gives its neighbour: 1 when a
    coordinated part takes back ("withdrawn and must not be followed" takes back once),
    0 when it endorses ("not wrong")."""
    parts = [_read(_Clause(p, "")) for p in re.split(r"\band\b", c.text)]
    return int(any(p.cues % 2 for p in parts))


def _attach(cs: list[_Clause]) -> list[_Clause]:
    """Conditions, exceptions, preambles and bare judgements given to the clause they
    belong to; what is left are the claims."""
    claims: list[_Clause] = []
    pending: list[_Clause] = []  # heads waiting for the clause they govern
    for c in cs:
        if c.marker in _CONTRAST:
            c.cues += 1
        if c.marker == ":" and claims and not claims[-1].judged:
            prev = claims[-1]  # an elaboration: one claim with what it elaborates
            prev.terms |= c.terms
            prev.advised |= c.advised
            prev.order += c.order
            prev.cues += c.cues
            continue
        if c.marker == ":" and claims:
            claims.pop()  # a judging preamble: "Priya was right and Marco was wrong: X"
        if c.marker in (*_CONDITION, "unless") or not c.terms:
            if claims:
                _give(claims[-1], c)
            else:
                pending.append(c)
            continue
        for p in pending:
            _give(c, p)
        pending = []
        claims.append(c)
    return claims


def _give(claim: _Clause, c: _Clause) -> None:
    """Give ``claim`` a condition, an exception or the verdict of a bare judgement."""
    if c.marker in _CONDITION:
        claim.condition |= c.terms
        claim.advised |= c.advised
    elif c.marker == "unless":
        claim.excused |= c.terms
    elif c.judged:
        claim.cues += _verdict(c)


def _sentence_units(sentence: str) -> list[Unit]:
    claims = [c for c in _attach(_split(sentence)) if c.terms and not (c.pointer and not c.cues)]
    return [
        Unit(
            frozenset(c.terms),
            frozenset(c.advised),
            c.cues % 2 == 1,
            frozenset(c.condition - c.terms),
            frozenset(c.excused),
            tuple(c.order),
        )
        for c in claims
    ]


def units(text: str) -> list[Unit]:
    """The clauses of ``text`` (see the module docstring), empty ones dropped."""
    return list(_units(text))


def _lines(text: str) -> list[str]:
    """The lines of ``text`` with a paragraph's soft-wrapped lines joined: a line starts
    anew after a blank line and at a heading, a list item, a table row or a fence."""
    out: list[str] = []
    joined = False  # whether the next line may continue the last one
    for line in text.splitlines():
        if not line.strip():
            joined = False
        elif joined and not _BLOCK.match(line):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
            joined = not line.lstrip().startswith(("#", "|", "```"))
    return out


@lru_cache(maxsize=8192)
def _units(text: str) -> tuple[Unit, ...]:
    out: list[Unit] = []
    for line in _lines(text):
        told = [u for s in _SENTENCE.split(line) for u in _sentence_units(s)]
        if _TOLD.match(line):
            told = [msgspec.structs.replace(u, advised=frozenset()) for u in told]
        out += told
    return tuple(out)
