"""Which chunks a correction contradicts: a lexical stance test, no NLI model.

A correction given only a chat or a trace ("Never skip CI for hotfixes") vetoes the
chunks that say the opposite, not every chunk that fired: the chunks most *similar* to
a correction are usually the right guidance, restating it ("CI is never skipped,
including for hotfixes"), and the withdrawn advice differs from them mainly by a
negation. So similarity alone picks the wrong set, and a chunk's stance is judged
clause by clause:

* **Clauses.** The correction and each chunk are read into clauses, each with its
  terms, its polarity, its condition and exception, and the terms it only reports
  (``ocb.engine.clauses``): "Never resize images in the API pods, even when thumbd
  falls behind; scale thumbd instead" withdraws resizing in the API pods (when thumbd
  falls behind) and advises scaling thumbd.
* **Coverage.** How much of a correction clause a chunk clause says: the share of the
  clause's terms found in it (with its condition), each weighted by its inverse
  document frequency in the brain's search index (the BM25 weights), in [0, 1].
  Fillers carry no weight at all, so a rare "even" or "honestly" cannot drown the
  claim. A clause of fewer than ``MIN_TERMS`` terms says too little to contradict
  anything and is not judged, and one of two terms is said only where they stand side
  by side ("deploy directly", not "deploy ... a direct message").
* **Opposition.** A chunk clause of the opposite polarity opposes a correction clause
  by its coverage; a term the chunk only reports (a past form, a past clause, a ``B``
  fact) does not count where the correction advises it, and a chunk that states the
  correction's exception (``unless`` ...) does not oppose that clause.
* **Agreement** is judged per *file*: a file that advises what some clause of the
  correction says, with its polarity (the runbook that says "Never skip CI, including
  for hotfixes", the thumbnails runbook that says to scale thumbd), is on the
  correction's side, and its other mentions of the opposite are reports of what went
  wrong, not advice.

A chunk is vetoed when its opposition to some clause of the correction reaches
``indexing.correction_min_similarity`` and its file does not restate the correction to
that degree. The threshold was chosen on cases written from the example workspace
(``benchmarks/bench_corrections.py``). Known limits: paraphrase and antonyms ("go through
CI" against "skip CI", "a flag would add nothing"), synonyms ("ships" against
"releases") and what a pronoun stands for ("making that the first move") are not seen;
``ocb inject --all`` or ``--target`` name the chunks instead.

``about`` says how much a correction (its content and the question it corrected) is
about a later question; a query leaves out the corrections it is not about
(``ocb.graph.query``, ``traversal.correction_min_about``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import msgspec

from ocb.engine.clauses import Unit, units
from ocb.engine.search import SearchIndex
from projections.graph import Node
from workspace_sync.text import terms

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

MIN_TERMS = 2
"""A correction clause of fewer terms says too little to contradict anything."""

Idf = Callable[[str], float]


class Stance(msgspec.Struct, frozen=True):
    """A chunk's stance on a correction: how strongly it opposes it, how strongly its
    file restates it (both coverages in [0, 1]), and whether it is vetoed."""

    node_id: str
    opposed: float
    agreed: float
    vetoed: bool


def idf_of(index: SearchIndex) -> Idf:
    """Term weights from the index's document frequencies (the BM25 idf)."""
    n = max(1, len(index.ids))

    def idf(term: str) -> float:
        i = index.vocab.get(term)
        d = 0 if i is None else int(index.ptr[i + 1] - index.ptr[i])
        return math.log1p((n - d + 0.5) / (d + 0.5))

    return idf


def about(question: str, text: str, idf: Idf) -> float:
    """How much ``text`` is about ``question``: the idf-weighted share of the question's
    search terms (CamelCase split) found in the text, in [0, 1]."""
    return _coverage(_terms(question), _terms(text), idf)


@lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    return frozenset(terms(_CAMEL.sub(" ", text)))


def _coverage(these: Iterable[str], of: Iterable[str], idf: Idf) -> float:
    """The idf-weighted share of ``these`` terms found in ``of``."""
    want = sorted(set(these))  # one order of float sums in every process
    total = sum(idf(t) for t in want)
    found = set(of)
    return sum(idf(t) for t in want if t in found) / total if total else 0.0


def _opposed(clause: Unit, text: str, idf: Idf, threshold: float) -> float:
    said = units(text)
    if clause.excused:  # a text that states the exception does not oppose
        stated = set().union(*(u.terms | u.condition for u in said))
        if _coverage(clause.excused, stated, idf) >= threshold:
            return 0.0
    best = 0.0
    for u in said:
        if u.negated == clause.negated:
            continue
        if len(clause.terms) == 2 and not _near(clause.terms, u.order):
            continue  # two words say something only side by side
        told = (u.terms | u.condition) - (clause.advised - u.advised)  # past-only: reports
        best = max(best, _coverage(clause.terms, told, idf))
    return best


def _near(terms: frozenset[str], order: Sequence[str], window: int = 2) -> bool:
    """Whether ``order`` holds every one of ``terms`` within ``window`` places of another."""
    at = [i for i, t in enumerate(order) if t in terms]
    return any(
        {order[k] for k in at if i <= k <= i + window * (len(terms) - 1)} >= terms for i in at
    )


def _agreed(clauses: Sequence[Unit], texts: Iterable[str], idf: Idf) -> float:
    best = 0.0
    for text in texts:
        for u in units(text):
            for c in clauses:
                if u.negated == c.negated:  # what it advises, not what it reports
                    best = max(best, _coverage(c.terms, u.advised | u.condition, idf))
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
    clauses = [u for u in units(correction) if len(u.terms) >= MIN_TERMS]
    agreed: dict[str, float] = {}
    out: list[Stance] = []
    for node in chunks:
        opposed = max((_opposed(c, node.text, idf, threshold) for c in clauses), default=0.0)
        if node.path not in agreed:
            agreed[node.path] = _agreed(clauses, (n.text for n in file_of(node.path)), idf)
        agree = agreed[node.path]
        vetoed = opposed >= threshold and agree < threshold
        out.append(Stance(node.id, round(opposed, 4), round(agree, 4), vetoed))
    return out
