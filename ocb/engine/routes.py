"""Query-anchored routes: the ``route`` learning rule.

Edge weights are shared by every question that passes through a node, so an outcome
that strengthens a walk for one question moves the walks of others. A route belongs to
one question instead: it is keyed by the question's terms (``route_key``), and a query
follows the route whose key shares at least ``routes.match`` of its terms (Jaccard; the
same terms always match). A route recorded before search stemmed with Porter2 holds a
key of light-stemmed terms (``legacy_key``): a question is matched under both, so an
upgraded brain still follows what it learned. What a route holds is a credit per node,
decided from the outcomes of the traces that followed it:

=============  ========  ======================================================
credit         state     what a query that follows the route does with the node
=============  ========  ======================================================
>= 0.5         compiled  fires it (the route's context)
(0, 0.5)       reserve   fires it only when no compiled node is left
(-0.5, 0)      dropped   does not fire it (a result, if the budget holds it)
<= -0.5        vetoed    neither fires nor returns it
=============  ========  ======================================================

The outcome decides (``decide_route``), with the paper's objective: minimise the context
subject to success.

* **Used ids** (the nodes the answer used or cited): used nodes are compiled for good
  (credit 1), the rest of the context is dropped. The next answer fires what was used.
* **A scalar success**: the context sufficed, but nothing says which part. The first
  half (by firing order: the best seeds first) is compiled, the rest kept in reserve,
  and whatever was in reserve before is dropped; a context of ``min_chunks`` nodes or
  fewer is compiled for good. Successive successes halve the context.
* **A failure**: nothing in the context helped: it is vetoed for this question, the
  reserve is promoted (the part of an earlier successful context not fired since), and
  the route counts a miss. With nothing compiled or in reserve, the next query
  *explores*: it fires the ``routes.explore`` best chunks the route has not tried
  (deterministic: the same ranking as the seeds). After ``routes.explore_limit`` misses
  the route is spent and fires nothing, until the workspace changes.

A credit is tied to the text of its node (its ``text_hash``): a node whose text
changed since is neither fired nor vetoed by the route, so a route over an edited file
is re-checked by the next outcome, not followed blindly. Nothing here reads a clock or
a random source, and every choice sorts explicitly.

**The transfer rule** learns the same routes, and lets a question that has none of its
own use the route of a question that means about the same (``related_route``). The
meaning of a question is its terms that select something in this brain: the stems the
search index holds, without identifiers and numbers (a build, an alert, a ticket, a
date: the slots of a task) and without the words of a chat's wrapper ("can you remind
me", "thanks"); two meanings are compared by their idf-weighted Jaccard share, so a
shared rare term counts for more than a shared common one, and a question that names
someone (``names``) only follows routes of questions that name nobody else. What travels
is what outcomes proved: the chunks of credit ``KEPT`` (used, or what a narrowing
kept), or every compiled chunk when the two mean the same (share 1). A question sharing
at least ``routes.similar`` of its meaning *borrows* the route: it fires those chunks in
place of its walk; so does one whose vector, by the brain's model, is within
``routes.similar_vector`` of the route's question (``nearest_route``: a model sees
synonyms that the index's terms do not). One sharing at least ``routes.related`` takes
the route as a *prior*: they fire first, then the question's own best matches up to
``routes.prior_share`` of the budget. Either way a borrowed chunk fires only when it is
among the question's own ``routes.within`` best matches, so another question's route
can bring a chunk forward but never one the question would not have considered; a route
that keeps none of its chunks there is not followed, and a borrowed route never hides
anything (its vetoes are its own question's). An outcome of a query that borrowed
teaches the question's own route, never the route it borrowed: two questions never
overwrite each other's routes. Borrowing is decided when a question is asked, from the
routes as they are, so a retracted outcome takes back what it lent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import lru_cache

import msgspec

from ocb.engine.embed import Matrix
from ocb.engine.learning import rule_of
from ocb.settings import Routes
from ocb_events.schema import QueryTraced, RouteCredit, RouteUpdated
from projections.graph import State as Graph
from projections.routes import Route, State
from workspace_sync.text import STOPWORDS, light_stem, terms, words

COMPILED = 0.5
"""Credit from which a node is part of a route's context."""
KEPT = 1.0
"""Credit of a node an outcome proved needed (used, or the last of a narrowed context)."""
RESERVE = 0.25
"""Credit of the half of a successful context the next answer does not fire."""
DROPPED = -0.25
"""Credit of a node a successful answer did not need."""
VETOED = -1.0
"""Credit of a node of a failed answer's context."""
_EPS = 1e-12


WRAPPERS = frozenset(
    terms(
        """can could would will you please pls remind reminder tell know wonder wondering
        quick question hey hi hello thanks thank thx help recall again me let"""
    )
)
"""The stems of the words a chat wraps a question in: they carry no evidence."""

BORROWED = ("borrowed", "prior")
"""The modes of a query that follows another question's route."""


_ID = re.compile(r"\d|[a-z][A-Z]|\w[._/:]\w")
"""What makes a token an identifier: a digit, an inner capital, or parts joined by a
dot, an underscore, a slash or a colon (``3.15.0``, ``ExportsStuck``, ``insights.v2``)."""
_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-Z][\w'’-]*")


def _plain(text: str) -> str:
    """``text`` without its identifiers: the slots of a task (a build, an alert, a
    ticket, a date) that change while the question stays the same."""
    return " ".join(t for t in text.split() if not _ID.search(t))


def meaning(text: str, vocab: Mapping[str, int]) -> frozenset[str]:
    """The terms of a question that select something in the brain: indexed (in
    ``vocab``), not an identifier or a number, not a wrapper word."""
    return frozenset(t for t in _content(text) if t in vocab)


@lru_cache(maxsize=16384)
def _content(text: str) -> frozenset[str]:
    return frozenset(
        t for t in terms(_plain(text)) if t not in WRAPPERS and not any(c.isdigit() for c in t)
    )


@lru_cache(maxsize=16384)
def names(question: str) -> frozenset[str]:
    """The terms of the names a question gives: a capitalised word, not an identifier,
    that does not open the question or a sentence ("When did Gina get her tattoo?"
    names ``gina``)."""
    text = _plain(question.strip())
    return frozenset(t for m in _NAME.findall(text) for t in terms(m) if t not in WRAPPERS)


def shared_meaning(a: frozenset[str], b: frozenset[str], idf: Callable[[str], float]) -> float:
    """The idf-weighted Jaccard share of two meanings, in [0, 1]."""
    union = sorted(a | b)  # one order of float sums in every process
    total = sum(idf(t) for t in union)
    return sum(idf(t) for t in union if t in a and t in b) / total if total > 0 else 0.0


def related_route(
    state: State, query: str, vocab: Mapping[str, int], idf: Callable[[str], float],
    least: float = 0.0,
) -> tuple[str, float]:  # fmt: skip
    """The route whose question shares the most meaning with ``query`` and that share
    ("", 0.0 for none, or none sharing at least ``least``); when ``query`` names someone
    or something (``names``), only among routes whose question names nobody and nothing
    else. The oldest route on a tie."""
    mine = meaning(query, vocab)
    if not mine:
        return "", 0.0
    weights = {t: idf(t) for t in sorted(mine)}
    total = sum(weights.values())
    if total <= 0:
        return "", 0.0
    # what a route's key shares with this meaning bounds its share from above: only the
    # routes that could reach ``least`` are compared exactly
    bound: dict[str, float] = {}
    for t in sorted(mine):
        for r in state.by_term.get(t, ()):
            bound[r] = bound.get(r, 0.0) + weights[t]
    named = names(query)

    def weight(t: str) -> float:
        if t not in weights:
            weights[t] = idf(t)
        return weights[t]

    best, top = "", 0.0
    for r in sorted(bound, key=lambda r: (state.routes[r].created_seq, r)):
        if bound[r] / total < max(least, top) - _EPS:
            continue
        route = state.routes[r]
        if named and not names(route.query) <= named:
            continue  # it is about someone or something this question does not name
        share = shared_meaning(mine, meaning(route.query, vocab), weight)
        if share > top + _EPS and share >= least - _EPS:
            best, top = r, share
    return best, top


Vectors = Callable[[Sequence[str]], Matrix]
"""A model's unit vectors of texts (the model channel of a fused embedder)."""


def nearest_route(
    state: State, query: str, mine: Matrix, vectors: Vectors, cache: dict[str, Matrix]
) -> tuple[str, float]:
    """The route whose question a model's vectors put closest to ``query`` (whose model
    vector is ``mine``) and that cosine ("", 0.0 for none), among those
    ``related_route`` may follow (``names``); the oldest route on a tie. ``cache`` keeps
    each question's vector by its text."""
    named = names(query)
    ids = [
        r for r in sorted(state.routes, key=lambda r: (state.routes[r].created_seq, r))
        if not named or names(state.routes[r].query) <= named
    ]  # fmt: skip
    if not ids:
        return "", 0.0
    missing = sorted({state.routes[r].query for r in ids} - cache.keys())
    if missing:
        cache.update(zip(missing, vectors(missing), strict=True))
    sims = [float(cache[state.routes[r].query] @ mine) for r in ids]
    best = max(range(len(ids)), key=lambda k: (sims[k], -k))
    return ids[best], sims[best]


def route_key(query: str) -> str:
    """The key of a question: its distinct stemmed terms, sorted."""
    return " ".join(sorted(set(terms(query))))


def legacy_key(query: str) -> str:
    """The key a route for the question was recorded under before lexical search
    stemmed with Porter2: its distinct terms by the light stemmer, sorted."""
    return " ".join(sorted({light_stem(w) for w in words(query) if w not in STOPWORDS}))


def keys_of(query: str) -> tuple[str, ...]:
    """The keys a question's route may be recorded under, the current one first."""
    key, old = route_key(query), legacy_key(query)
    return (key,) if old == key else (key, old)


def find_route(state: State, keys: Sequence[str], match: float) -> str:
    """The id of the route a question with ``keys`` (``keys_of``) follows ("" for
    none): the route of one of its keys (the first that has one), else the one whose
    key shares the largest share of terms with one of them, at least ``match`` (the
    oldest on a tie)."""
    wanted = [k for k in keys if k]
    for key in wanted:
        rid = state.by_key.get(key, "")
        if rid in state.routes:
            return rid
    if not wanted or match >= 1.0:
        return ""
    share: dict[str, float] = {}
    for key in wanted:
        mine = set(key.split())
        common: dict[str, int] = {}  # the terms each route's key shares with this one
        for t in sorted(mine):
            for r in state.by_term.get(t, ()):
                common[r] = common.get(r, 0) + 1
        for r, c in common.items():
            union = len(mine) + _size(state.routes[r].key) - c
            share[r] = max(share.get(r, 0.0), c / union)
    best, top = "", 0.0
    for r in sorted(share, key=lambda r: (state.routes[r].created_seq, r)):
        if share[r] > top + _EPS:
            best, top = r, share[r]
    return best if top >= match - _EPS else ""


@lru_cache(maxsize=16384)
def _size(key: str) -> int:
    """The number of distinct terms of a key."""
    return len(set(key.split()))


def live_credits(route: Route, graph: Graph) -> dict[str, float]:
    """A route's credits of nodes that still exist with the text they were given for."""
    nodes = graph.nodes
    return {
        n: c
        for n, c in route.credits.items()
        if n in nodes and nodes[n].text_hash == route.hashes.get(n, "")
    }


class Plan(msgspec.Struct, frozen=True):
    """What a query following route ``route`` does: ``mode`` compiled (fire ``fire``),
    explore (fire the best chunks not in ``avoid``) or spent (fire nothing); never
    return ``vetoed``. Following another question's route (``BORROWED``): ``borrowed``
    (fire those of ``fire`` among the question's own ``within`` best matches) or
    ``prior`` (the same, then its own best matches up to ``share`` of the budget)."""

    route: str
    mode: str
    fire: tuple[str, ...] = ()
    explore: int = 0
    avoid: frozenset[str] = frozenset()
    vetoed: frozenset[str] = frozenset()
    within: int = 0
    share: float = 0.0


def plan_route(
    state: State, graph: Graph, query: str, s: Routes, *, rule: str = "route",
    vocab: Mapping[str, int] | None = None, idf: Callable[[str], float] | None = None,
    near: Callable[[str], tuple[str, float]] | None = None,
) -> Plan | None:  # fmt: skip
    """How a query follows its route, or None when it has none (or one that holds
    nothing yet): it walks the graph. Under the ``transfer`` rule (with the index's
    ``vocab`` and ``idf``), a question without a route of its own may follow a related
    question's (see the module docstring)."""
    rid = find_route(state, keys_of(query), s.match)
    route = state.routes.get(rid)
    if route is None:
        if rule_of(rule).borrows and vocab is not None and idf is not None:
            return _borrow(state, graph, query, s, vocab, idf, near)
        return None
    live = live_credits(route, graph)
    vetoed = frozenset(n for n, c in live.items() if c <= VETOED / 2)
    fire = tuple(sorted(n for n, c in live.items() if c >= COMPILED))
    fire = fire or tuple(sorted(n for n, c in live.items() if c > 0))
    if fire:
        return Plan(rid, "compiled", fire, vetoed=vetoed)
    if not live and route.misses == 0:
        return None
    if route.misses >= s.explore_limit and graph.nodes_seq <= route.seq:
        return Plan(rid, "spent", vetoed=vetoed)
    avoid = frozenset(n for n, c in live.items() if c < 0)
    return Plan(rid, "explore", explore=s.explore, avoid=avoid, vetoed=vetoed)


def _borrow(
    state: State, graph: Graph, query: str, s: Routes, vocab: Mapping[str, int],
    idf: Callable[[str], float], near: Callable[[str], tuple[str, float]] | None = None,
) -> Plan | None:  # fmt: skip
    """The plan of a question following the route of the question most like it: the
    chunks its outcomes proved (credit ``KEPT``: used, or what a narrowing kept), when
    it shares enough meaning; all its compiled chunks when it means the same (only a
    wrapper, an identifier or an unindexed word tells them apart)."""
    rid, share = related_route(state, query, vocab, idf, s.related)
    if share < s.similar - _EPS and near is not None:
        close, cos = near(query)  # a model's vectors see a reworded question
        if close and cos >= s.similar_vector - _EPS:
            rid, share = close, s.similar
    if not rid:
        return None
    live = live_credits(state.routes[rid], graph)
    least = COMPILED if share >= 1.0 - _EPS else KEPT
    fire = tuple(sorted(n for n, c in live.items() if c >= least - _EPS))
    if not fire:
        return None
    mode = "borrowed" if share >= s.similar - _EPS else "prior"
    return Plan(rid, mode, fire, within=s.within, share=s.prior_share)


def _targets(
    fired: Sequence[str], live: dict[str, float], reward: float, used: Collection[str],
    s: Routes,
) -> tuple[dict[str, float], int]:  # fmt: skip
    """The credit each touched node gets, and the misses to add."""
    out: dict[str, float] = {}
    if reward < 0:
        out.update({n: VETOED for n in fired})
        out.update({n: COMPILED for n, c in live.items() if n not in out and 0 < c < COMPILED})
        return out, 1
    if used:
        out.update({n: KEPT if n in used else DROPPED for n in fired})
    elif len(fired) <= s.min_chunks:
        out.update({n: KEPT for n in fired})
    else:
        half = math.ceil(len(fired) / 2)
        out.update({n: COMPILED for n in fired[:half]})
        out.update({n: RESERVE for n in fired[half:]})
    out.update({n: DROPPED for n, c in live.items() if n not in out and c > 0})
    return out, 0


def decide_route(
    state: State, graph: Graph, trace: QueryTraced, reward: float, s: Routes, *,
    used: Collection[str] = (), outcome_seq: int,
) -> RouteUpdated | None:  # fmt: skip
    """The change an outcome of ``trace`` makes to its question's route (a new route
    ``r<outcome_seq>`` when it has none), or None when it changes nothing."""
    key = route_key(trace.query)
    if reward == 0 or not key:
        return None
    rid = trace.route
    if rid not in state.routes or trace.route_mode in BORROWED:
        rid = find_route(state, keys_of(trace.query), s.match)  # its own, never a borrowed one
    route = state.routes.get(rid)
    live = live_credits(route, graph) if route is not None else {}
    fired = [n for n in trace.fired if n in graph.nodes]
    targets, misses = _targets(fired, live, reward, used, s)
    stored = route.credits if route is not None else {}
    hashes = route.hashes if route is not None else {}
    credits = []
    for n in sorted(targets):
        delta = targets[n] - stored.get(n, 0.0)
        h = graph.nodes[n].text_hash
        if abs(delta) > _EPS or (n in stored and hashes.get(n) != h):
            credits.append(RouteCredit(node=n, delta=delta, text_hash=h))
    if not credits and not misses:
        return None
    if route is None:
        return RouteUpdated(
            route_id=f"r{outcome_seq}", cause_seq=outcome_seq, credits=tuple(credits),
            misses=misses, key=key, query=trace.query,
        )  # fmt: skip
    return RouteUpdated(route_id=rid, cause_seq=outcome_seq, credits=tuple(credits), misses=misses)


def reverse_route(update: RouteUpdated, state: State, retraction_seq: int) -> RouteUpdated | None:
    """The reversal of a route update: every credit and the misses moved back by what
    it added (later changes stay), or None when its route is gone."""
    route = state.routes.get(update.route_id)
    if route is None:
        return None
    credits = tuple(
        RouteCredit(node=c.node, delta=-c.delta, text_hash=route.hashes.get(c.node, c.text_hash))
        for c in update.credits
    )
    return RouteUpdated(
        route_id=update.route_id, cause_seq=retraction_seq, credits=credits, misses=-update.misses
    )
