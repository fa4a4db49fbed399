"""Traversal: from seeds, walk learned edges to a small context, recording every
decision so that learning can credit the path actually taken.

At each fired node ``u`` the route policy is a softmax, with temperature ``tau``, over
the logits of the outgoing candidates and the node's STOP logit:

* targets vetoed by an inhibitory edge from any fired node are never candidates;
* an edge's tier is read on its damped weight ``w * damping^uses`` (``uses``: how often
  this episode already took it); dormant edges are skipped;
* a candidate's logit depends on the route mode: ``edge`` is its damped weight plus
  the edge's relevance (teacher-given, 0 by default); ``edge+sim`` adds ``alpha`` times
  the cosine of the query and the target; ``learned`` asks the trained route model
  (``ocb.route_model``) to score those same features. A target that already fired
  loses ``visit_penalty``;
* activation flows as probability: target ``v`` receives ``a(u) * p(v | u)``, so a
  node fires with the chance that the policy's walk reaches it. Reflex candidates
  always pass activation on; habitual ones do when it reaches ``fire_threshold``
  (at most ``branch`` per node). Early on, probability is spread and the walk fans
  out; learning concentrates it on one route and the fan-out falls dormant;
* the policy's action, the one learning credits, is the best candidate when it passed
  activation on and beats STOP, else STOP.

Budgets on hops and fired nodes stop the walk. The context budget is a hard cap on
the assembled context (every fired node's ``context_block``, joined by ``SEPARATOR``):
a node that does not fit in what is left is not fired, and the walk goes on with the
next candidates (smaller ones may fit); the trace's stop reason then says
``max_context_chars`` unless a later budget stopped it. A node's text is never cut:
the context holds whole chunks whose sources are exact. Nothing here reads a clock or
a random source, and every choice sorts explicitly, so the same graph and query give
the same trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from ocb.engine.policy import softmax, tier_of
from ocb.settings import Traversal
from ocb_events.schema import STOP, Candidate, Step
from projections.graph import Node, State

SEPARATOR = "\n\n"
"""Between two blocks of an assembled context."""

Similarity = Callable[[str], float]
"""The cosine of the query and a node."""

Scorer = Callable[[float, float, float, float], float]
"""A learned logit from (damped weight, relevance, cos(query, target), cos(query, source))."""


def block(source: str, text: str) -> str:
    """A text under its source, as an assembled context shows it."""
    return f"[{source}]\n{text}"


def context_block(node: Node) -> str:
    """A node as an assembled context shows it: its source, then its text."""
    return block(node.source, node.text)


def block_chars(node: Node, text: str | None = None) -> int:
    """``len(context_block(node))`` without building it (with ``text`` in place of the
    node's)."""
    return len(node.source) + 3 + len(node.text if text is None else text)


class Walk(msgspec.Struct):
    """What a traversal fired and decided. ``context_chars`` counts the fired nodes'
    texts; ``context_len`` is the length of their assembled context, which never
    exceeds the budget."""

    activation: dict[str, float] = msgspec.field(default_factory=dict)
    steps: list[Step] = msgspec.field(default_factory=list)
    vetoed: set[str] = msgspec.field(default_factory=set)
    stop_reason: str = "frontier_empty"
    context_chars: int = 0
    context_len: int = 0

    @property
    def fired(self) -> list[str]:
        """Fired node ids in firing order."""
        return list(self.activation)

    def ranked(self) -> list[str]:
        """Fired node ids by activation, then firing order."""
        order = {n: i for i, n in enumerate(self.activation)}
        return sorted(self.activation, key=lambda n: (-self.activation[n], order[n]))


class _Walker:
    def __init__(
        self,
        graph: State,
        s: Traversal,
        similarity: Similarity | None,
        scorer: Scorer | None,
        barred: frozenset[str] = frozenset(),
    ) -> None:
        self.g = graph
        self.barred = barred
        self.s = s
        self.sim = similarity or (lambda _node: 0.0)
        self.scorer = scorer if s.mode == "learned" else None
        self.walk = Walk()
        self.uses: dict[tuple[str, str], int] = {}
        self.done = False
        self.blocks = 0  # the fired nodes' block_chars

    def account(self, node: Node, sign: int) -> None:
        """Count a node that fired (``sign`` 1) or left the context (-1)."""
        w = self.walk
        w.context_chars += sign * len(node.text)
        self.blocks += sign * block_chars(node)
        n = len(w.activation)
        w.context_len = self.blocks + len(SEPARATOR) * (n - 1) if n else 0

    def veto_from(self, node_id: str) -> None:
        """Veto the targets of ``node_id``'s inhibitory edges; a vetoed node that
        already fired leaves the context (the veto is hard)."""
        w = self.walk
        for target, e in self.g.out.get(node_id, {}).items():
            if e.weight <= self.s.inhibitory and target != node_id:
                w.vetoed.add(target)
                if target in w.activation:
                    del w.activation[target]
                    self.account(self.g.nodes[target], -1)

    def fire(self, node_id: str, activation: float) -> bool:
        """Fire a node (or raise its activation). False when it did not fire: it does
        not fit in the context budget (the walk goes on), or ``max_fired`` stops the
        walk (``done``)."""
        w = self.walk
        if node_id in w.activation:
            w.activation[node_id] = max(w.activation[node_id], activation)
            return True
        if len(w.activation) >= self.s.max_fired:
            w.stop_reason, self.done = "max_fired", True
            return False
        node = self.g.nodes[node_id]
        cost = block_chars(node) + (len(SEPARATOR) if w.activation else 0)
        if w.context_len + cost > self.s.max_context_chars:
            w.stop_reason = "max_context_chars"
            return False
        w.activation[node_id] = activation
        self.account(node, 1)
        self.veto_from(node_id)
        return True

    def logit(self, u: str, v: str, eff: float, relevance: float) -> float:
        if self.scorer is not None:
            return self.scorer(eff, relevance, self.sim(v), self.sim(u))
        if self.s.mode == "edge+sim":
            return eff + relevance + self.s.alpha * self.sim(v)
        return eff + relevance

    def candidates(self, u: str) -> list[Candidate]:
        s, out = self.s, []
        for v, e in self.g.out.get(u, {}).items():
            if v in self.walk.vetoed or e.weight <= s.inhibitory or v in self.barred:
                continue
            k = self.uses.get((u, v), 0)
            eff = e.weight * s.damping**k
            tier = tier_of(eff, s)
            if tier == "dormant":
                continue
            logit = self.logit(u, v, eff, e.relevance)
            if v in self.walk.activation:
                logit -= s.visit_penalty
            out.append(Candidate(target=v, weight=e.weight, logit=logit, tier=tier, uses=k))
        out.sort(key=lambda c: (-c.logit, c.target))
        return out

    def step(self, hop: int, u: str) -> tuple[Step, dict[str, float]] | None:
        """The policy's decision at ``u`` and the activation it passes to each target."""
        a_u = self.walk.activation[u]
        cands = self.candidates(u)
        if not cands:
            return None
        stop_logit = self.g.stop.get(u, 0.0)
        probs = softmax([c.logit for c in cands] + [stop_logit], self.s.tau)
        passed: dict[str, float] = {}
        habitual = 0
        for c, p in zip(cands, probs, strict=False):
            if c.tier == "reflex":
                passed[c.target] = a_u * p
            elif a_u * p >= self.s.fire_threshold and habitual < self.s.branch:
                passed[c.target] = a_u * p
                habitual += 1
        # the action credited is what the walk did: a move that fired, or STOP when
        # the best move beat STOP but carried too little activation to fire
        best = cands[0]
        chosen = best.target if best.target in passed and best.logit > stop_logit else STOP
        step = Step(
            hop=hop,
            node=u,
            candidates=tuple(cands),
            stop_logit=stop_logit,
            chosen=chosen,
            followed=tuple(passed),
        )
        return step, passed

    def expand(self, hop: int, frontier: list[str]) -> list[str]:
        act = self.walk.activation
        nxt: dict[str, float] = {}
        for u in sorted((n for n in frontier if n in act), key=lambda n: (-act[n], n)):
            if u not in act:  # vetoed by a node that fired earlier in this hop
                continue
            got = self.step(hop, u)
            if got is None:
                continue
            st, passed = got
            self.walk.steps.append(st)
            for v, a in passed.items():
                self.uses[(u, v)] = self.uses.get((u, v), 0) + 1
                if v in self.walk.vetoed:
                    continue
                if self.fire(v, a):
                    nxt[v] = max(nxt.get(v, 0.0), a)
                elif self.done:
                    return []
        return sorted(nxt, key=lambda n: (-nxt[n], n))


def traverse(
    graph: State,
    seeds: Sequence[tuple[str, float]],
    settings: Traversal,
    similarity: Similarity | None = None,
    scorer: Scorer | None = None,
    barred: frozenset[str] = frozenset(),
) -> Walk:
    """Walk the graph from ``seeds`` (node id, activation in (0, 1]) in rank order.

    Inhibitory edges out of every seed candidate veto their targets before anything
    fires, so a correction that ranks among the seeds suppresses what it corrects.
    The walk never moves to a ``barred`` node (a correction the query is not about).
    """
    w = _Walker(graph, settings, similarity, scorer, barred)
    for sid, _ in seeds:
        w.veto_from(sid)
    frontier: list[str] = []
    for sid, a in seeds:
        if sid in w.walk.vetoed or sid not in graph.nodes:
            continue
        if w.fire(sid, a):
            frontier.append(sid)
        elif w.done:
            break
    hop = 0
    while frontier and not w.done:
        if hop >= settings.max_hops:
            w.walk.stop_reason = "max_hops"
            break
        hop += 1
        frontier = w.expand(hop, frontier)
    return w.walk


def fire_nodes(
    graph: State,
    seeds: Sequence[tuple[str, float]],
    nodes: Sequence[str],
    settings: Traversal,
) -> Walk:
    """Fire ``nodes`` in order, without walking (a route's context), within the
    budgets; inhibitory edges out of every seed candidate veto their targets first, as
    in ``traverse``."""
    w = _Walker(graph, settings, None, None)
    for sid, _ in seeds:
        w.veto_from(sid)
    w.walk.stop_reason = "route"
    for nid in nodes:
        if nid in w.walk.vetoed or nid not in graph.nodes:
            continue
        if not w.fire(nid, 1.0) and w.done:
            break
    return w.walk
