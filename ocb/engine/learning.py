"""Learning rules: what each rule does with an outcome (``RULES``), and from a scored
trajectory to edge-weight deltas.

The edge rules credit the trajectory recorded in the trace, the policy's chosen action
at each step in order, not the list of fired nodes.

``pg`` is REINFORCE over the route policy softmax((logits, STOP logit) / tau): for
step t of T (by hop) with chosen action a, every candidate j and STOP gets

    delta_j = eta * gamma^(T-1-t) * (r * source_weight - b_node)
              * (1[j = a] - p_j) / tau * dlogit_j/dw_j

where dlogit/dw = damping^uses for an edge and 1 for STOP, and b_node is the node's
reward baseline: a running average of the rewards of outcomes through it, moved by
``baseline_rate`` per outcome and recorded with each update (so it is state, folded
from the log, never recomputed). For a fresh node (b = 0) with w = [0.5, 0.3, -0.2],
STOP 0, tau 1, eta 0.1, r +1 and A chosen: A +0.066, B -0.028, C -0.017, STOP -0.021.

``heuristic`` moves each chosen edge by eta * gamma^(T-1-t) * r * source_weight.

A positive outcome never weakens an edge on the rewarded path: such a net delta is
clamped at zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import msgspec

from ocb.engine.policy import softmax
from ocb.settings import Learning
from ocb_events.errors import InputError
from ocb_events.schema import STOP, EdgeDelta, EdgeDeltas, LearnParams, NodeValue, Step

_EPS = 1e-12


def _discounts(steps: Sequence[Step], gamma: float) -> list[float]:
    last = max((st.hop for st in steps), default=0)
    return [gamma ** (last - st.hop) for st in steps]


def pg_deltas(
    steps: Sequence[Step],
    reward: float,
    s: Learning,
    source_weight: float,
    damping: float,
    tau: float = 1.0,
    baselines: Mapping[str, float] | None = None,
) -> dict[tuple[str, str], float]:
    """REINFORCE deltas keyed by (source, target); target STOP is the stop weight.
    ``tau`` and ``damping`` are those of the policy that acted (the trace's);
    ``baselines`` are the nodes' running-average rewards before this outcome."""
    r = reward * source_weight
    base = baselines or {}
    out: dict[tuple[str, str], float] = {}
    for st, disc in zip(steps, _discounts(steps, s.gamma), strict=True):
        logits = [c.logit for c in st.candidates] + [st.stop_logit]
        probs = softmax(logits, tau)
        scale = s.eta * disc * (r - base.get(st.node, 0.0)) / tau
        for c, p in zip(st.candidates, probs, strict=False):
            grad = ((1.0 if c.target == st.chosen else 0.0) - p) * damping**c.uses
            key = (st.node, c.target)
            out[key] = out.get(key, 0.0) + scale * grad
        key = (st.node, STOP)
        out[key] = out.get(key, 0.0) + scale * ((1.0 if st.chosen == STOP else 0.0) - probs[-1])
    return out


def heuristic_deltas(
    steps: Sequence[Step], reward: float, s: Learning, source_weight: float
) -> dict[tuple[str, str], float]:
    """Move each chosen edge by eta * discount * reward * source weight."""
    out: dict[tuple[str, str], float] = {}
    for st, disc in zip(steps, _discounts(steps, s.gamma), strict=True):
        if st.chosen == STOP:
            continue
        key = (st.node, st.chosen)
        out[key] = out.get(key, 0.0) + s.eta * disc * reward * source_weight
    return out


EdgeDeltasOf = Callable[
    [Sequence[Step], float, Learning, float, float, float, Mapping[str, float]],
    dict[tuple[str, str], float],
]
"""(steps, reward, settings, source weight, damping, tau, baselines) -> raw deltas."""


def _pg(
    steps: Sequence[Step], reward: float, s: Learning, weight: float, damping: float,
    tau: float, baselines: Mapping[str, float],
) -> dict[tuple[str, str], float]:  # fmt: skip
    return pg_deltas(steps, reward, s, weight, damping, tau, baselines)


def _heuristic(
    steps: Sequence[Step], reward: float, s: Learning, weight: float, damping: float,
    tau: float, baselines: Mapping[str, float],
) -> dict[tuple[str, str], float]:  # fmt: skip
    return heuristic_deltas(steps, reward, s, weight)


class LearningRule(msgspec.Struct, frozen=True, kw_only=True):
    """What a learning rule does with an outcome: move the edges walked (``edges``
    computes the deltas) or, without ``edges``, learn the scored question's route
    (``ocb.engine.routes``) and move no edge. ``borrows``: a question without a route
    of its own may follow a related question's. ``path``: the rule an outcome of an
    explicit node path learns with, when this one needs a question to anchor to."""

    edges: EdgeDeltasOf | None = None
    borrows: bool = False
    path: str = ""

    @property
    def learns_routes(self) -> bool:
        """Whether outcomes learn routes (and move no edge)."""
        return self.edges is None


RULES: dict[str, LearningRule] = {
    "transfer": LearningRule(borrows=True, path="pg"),
    "route": LearningRule(path="pg"),
    "pg": LearningRule(edges=_pg),
    "heuristic": LearningRule(edges=_heuristic),
}
"""Every learning rule (``ocb.settings.Rule``; a test holds the two to the same names)."""


def rule_of(name: str) -> LearningRule:
    """What the learning rule ``name`` does.

    Raises:
        InputError: ``name`` is not a learning rule.
    """
    rule = RULES.get(name)
    if rule is None:
        raise InputError(f"unknown learning rule {name!r}: use one of {', '.join(RULES)}")
    return rule


def group_by_source(deltas: Sequence[EdgeDelta]) -> tuple[EdgeDeltas, ...]:
    """Deltas sorted by (source, target), grouped by source as they are stored."""
    groups: dict[str, list[EdgeDelta]] = {}
    for d in sorted(deltas, key=lambda d: (d.source, d.target)):
        groups.setdefault(d.source, []).append(d)
    return tuple(
        EdgeDeltas(
            source=src,
            targets=tuple(d.target for d in ds),
            deltas=tuple(d.delta for d in ds),
        )
        for src, ds in groups.items()
    )


class Decision(msgspec.Struct, frozen=True):
    """What an outcome changes: edge deltas (sorted, zeros dropped), the settings used,
    and the new reward baselines of the nodes it passed through."""

    deltas: tuple[EdgeDelta, ...]
    params: LearnParams
    baselines: tuple[NodeValue, ...]


def new_baselines(
    steps: Sequence[Step], r: float, rate: float, baselines: Mapping[str, float]
) -> tuple[NodeValue, ...]:
    """Each decision node's running average moved ``rate`` of the way towards ``r``."""
    if rate <= 0:
        return ()
    nodes = sorted({st.node for st in steps})
    return tuple(
        NodeValue(node=n, value=baselines.get(n, 0.0) + rate * (r - baselines.get(n, 0.0)))
        for n in nodes
    )


def decide_deltas(
    steps: Sequence[Step],
    reward: float,
    s: Learning,
    *,
    source: str,
    damping: float,
    tau: float = 1.0,
    baselines: Mapping[str, float] | None = None,
) -> Decision:
    """The deltas an outcome causes under ``s.rule``, and the baselines it moves.

    Raises:
        InputError: ``s.rule`` is not a learning rule, or one that moves no edge.
    """
    edges = rule_of(s.rule).edges
    if edges is None:
        raise InputError(f"learning rule {s.rule!r} moves no edge: it learns routes")
    weight = s.source_weight(source)
    base = baselines or {}
    raw = edges(steps, reward, s, weight, damping, tau, base)
    if reward > 0:
        for st in steps:
            key = (st.node, st.chosen)
            if st.chosen != STOP and raw.get(key, 0.0) < 0.0:
                raw[key] = 0.0
    deltas = tuple(
        EdgeDelta(source=src, target=dst, delta=d)
        for (src, dst), d in sorted(raw.items())
        if abs(d) > _EPS
    )
    params = LearnParams(
        eta=s.eta, tau=tau, gamma=s.gamma, baseline_rate=s.baseline_rate, source_weight=weight
    )
    return Decision(deltas, params, new_baselines(steps, reward * weight, s.baseline_rate, base))
