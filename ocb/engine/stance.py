"""Which chunks a correction contradicts: a lexical stance test, no NLI model.

A correction given only a chat or a trace ("Never skip CI for hotfixes") vetoes the
chunks that say the opposite, not every chunk that fired: the chunks most *similar* to
a correction are usually the right guidance, restating it ("CI is never skipped,
including for hotfixes"), and the withdrawn advice differs from them mainly by a
negation. So similarity alone picks the wrong set, and a chunk's stance is judged unit
by unit:

* **Units.** Text is cut into sentences (and lines), and sentences at ``;``. A unit is
  *negated* when it holds a negation cue (``not``, ``never``, ``no``, ``without``,
  ``n't``, ``instead``, ``rather`` ...), or when its sentence holds a withdrawal cue
  (``wrong``, ``withdrawn``, ``superseded``, ``rejected``, ``reversed`` ...), which
  usually follows the statement it takes back ("... may skip CI; that guidance is
  withdrawn"). The correction's units are its clauses, each with its polarity.
* **Coverage.** How much of a clause a unit says: the share of the clause's terms
  (stemmed, stopwords and cues dropped) found in the unit, each weighted by its inverse
  document frequency in the brain's search index (the BM25 weights), in [0, 1].
* **Opposition.** A unit of the opposite polarity to a clause opposes it by its
  coverage; a past-tense mention ("the hotfix that skipped CI") reports what happened
  rather than advising it, so a clause term the unit only has in a past form does not
  count there. A chunk's opposition is its best opposing unit.
* **Agreement** is judged per *file*: a file with a unit of the clause's polarity
  covering it (the runbook that says "Never skip CI, including for hotfixes") is on
  the correction's side, and its other mentions of the opposite are reports of what went
  wrong, not advice.

A chunk is vetoed when its opposition reaches ``indexing.correction_min_similarity``
and its file does not restate the correction to that degree. The threshold was chosen
on cases written from the example workspace (``benchmarks/bench_corrections.py``).
Known limits: paraphrase and antonyms ("go through CI" against "skip CI") are not
seen, nor double negation; ``ocb inject --all`` or ``--target`` name the chunks
instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence

import msgspec

from ocb.engine.search import SearchIndex
from projections.graph import Node
from workspace_sync.text import STOPWORDS, light_stem, words

NEGATIONS = frozenset(
    "no not never nor neither cannot without nobody none nothing avoid instead rather".split()
)
"""Cues that negate the unit they are in."""
WITHDRAWALS = frozenset(
    """wrong incorrect withdrawn withdraw withdraws superseded supersede supersedes
    reversed rejected forbidden prohibited obsolete outdated deprecated""".split()
)
"""Cues that take back what their whole sentence states."""
_CUES = NEGATIONS | WITHDRAWALS
_NOT = re.compile(r"\w+n['’]t\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")

Idf = Callable[[str], float]


class Unit(msgspec.Struct, frozen=True):
    """A clause or sentence part: its terms, the terms not only in a past form, and
    whether it is negated."""

    terms: frozenset[str]
    advised: frozenset[str]
    negated: bool


class Stance(msgspec.Struct, frozen=True):
    """A chunk's stance on a correction: how strongly it opposes it, how strongly its
    file restates it (both coverages in [0, 1]), and whether it is vetoed."""

    node_id: str
    opposed: float
    agreed: float
    vetoed: bool


def _key(term: str) -> str:
    # the shared stemmer leaves "hotfixes" as "hotfixe": fold the trailing e
    return term[:-1] if len(term) > 4 and term.endswith("e") else term


def _past(word: str) -> bool:
    return word.endswith("ed") and light_stem(word) != word


def units(text: str) -> list[Unit]:
    """The units of ``text`` (see the module docstring), empty ones dropped."""
    out: list[Unit] = []
    for sentence in _SENTENCE.split(text):
        withdrawn = any(w in WITHDRAWALS for w in words(sentence))
        for part in sentence.split(";"):
            found = words(part)
            ws = [w for w in found if w not in STOPWORDS and w not in _CUES]
            if not ws:
                continue
            negated = withdrawn or bool(_NOT.search(part.lower()))
            negated = negated or any(w in NEGATIONS for w in found)
            terms = frozenset(_key(light_stem(w)) for w in ws)
            advised = frozenset(_key(light_stem(w)) for w in ws if not _past(w))
            out.append(Unit(terms, advised, negated))
    return out


def idf_of(index: SearchIndex) -> Idf:
    """Term weights from the index's document frequencies (the BM25 idf); a folded
    term (``hotfix``) counts the documents of its unfolded spelling too."""
    n = max(1, len(index.ids))

    def df(term: str) -> int:
        i = index.vocab.get(term)
        return 0 if i is None else int(index.ptr[i + 1] - index.ptr[i])

    def idf(term: str) -> float:
        d = max(df(term), df(term + "e"))
        return math.log1p((n - d + 0.5) / (d + 0.5))

    return idf


def _coverage(clause: Unit, terms: Iterable[str], idf: Idf) -> float:
    total = sum(idf(t) for t in clause.terms)
    return sum(idf(t) for t in clause.terms.intersection(terms)) / total if total else 0.0


def _opposed(clauses: Sequence[Unit], text: str, idf: Idf) -> float:
    best = 0.0
    for u in units(text):
        for c in clauses:
            if u.negated != c.negated:
                told = u.terms - (c.advised - u.advised)  # past-only mentions report
                best = max(best, _coverage(c, told, idf))
    return best


def _agreed(clauses: Sequence[Unit], texts: Iterable[str], idf: Idf) -> float:
    best = 0.0
    for text in texts:
        for u in units(text):
            for c in clauses:
                if u.negated == c.negated:
                    best = max(best, _coverage(c, u.terms, idf))
    return best


def judge(
    correction: str,
    chunks: Sequence[Node],
    file_of: Callable[[str], Sequence[Node]],
    idf: Idf,
    threshold: float,
) -> list[Stance]:
    """The stance of each chunk on ``correction``, in the given order.

    Args:
        correction: the correction's content.
        chunks: the chunks to judge.
        file_of: every chunk of a workspace path (for the file's agreement).
        idf: term weights (``idf_of``).
        threshold: the coverage at which opposition vetoes and agreement spares.
    """
    clauses = [u for u in units(correction) if u.terms]
    agreed: dict[str, float] = {}
    out: list[Stance] = []
    for node in chunks:
        opposed = _opposed(clauses, node.text, idf) if clauses else 0.0
        if node.path not in agreed:
            agreed[node.path] = _agreed(clauses, (n.text for n in file_of(node.path)), idf)
        agree = agreed[node.path]
        vetoed = opposed >= threshold and agree < threshold
        out.append(Stance(node.id, round(opposed, 4), round(agree, 4), vetoed))
    return out
