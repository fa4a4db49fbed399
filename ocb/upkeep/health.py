"""Health and autotune: how the graph routes, and the settings that would fix it.

The report reads the graph (tier shares of its edges) and the most recent traces
(fired nodes and context characters per query). When the graph is unhealthy it
proposes new settings, each with its reason; applying them records config events, so
time travel keeps the settings that were in force.

Rules:
* brain death, more than 90 % of edges dormant: routing stops at the seeds. Propose a
  habitual threshold low enough that the top 30 % of positive edges are routable again.
* saturated context, the average query fires at least 90 % of ``max_fired``: propose a
  fire threshold 1.5 times higher.
* no routing, queries fire only their seeds although routable edges exist: propose a fire
  threshold half as high.
"""

from __future__ import annotations

import msgspec

from ocb.engine.policy import tiers
from ocb.settings import Traversal, actor_of
from ocb.store import Store
from ocb_events.errors import InputError
from ocb_events.schema import ConfigChanged, QueryTraced, Record
from projections.graph import State as GraphState
from projections.tiers import DORMANT_LIMIT, tier_counts, tier_shares

WINDOW = 100
ROUTABLE_SHARE = 0.3


class Proposal(msgspec.Struct, frozen=True):
    """A setting change and why."""

    key: str
    current: float
    proposed: float
    reason: str


class Health(msgspec.Struct):
    """The graph's tier shares, recent query costs, findings and proposals."""

    edges: int
    tiers: dict[str, float]
    dormant_share: float
    window: int
    avg_fired: float
    avg_seeds: float
    avg_context_chars: float
    findings: list[str]
    proposals: list[Proposal]


def _positive_weights(g: GraphState) -> list[float]:
    return sorted(e.weight for ts in g.out.values() for e in ts.values() if e.weight > 0)


def assess(g: GraphState, traces: list[QueryTraced], s: Traversal) -> Health:
    """The health of a graph under settings ``s``, given its recent traces."""
    counts = tier_counts(g, tiers(s))
    total = sum(counts.values())
    shares = tier_shares(counts)
    n = len(traces)
    avg_fired = sum(len(t.fired) for t in traces) / n if n else 0.0
    avg_seeds = sum(len(t.seeds) for t in traces) / n if n else 0.0
    avg_chars = sum(t.context_chars for t in traces) / n if n else 0.0
    findings: list[str] = []
    proposals: list[Proposal] = []
    if total and shares["dormant"] > DORMANT_LIMIT:
        findings.append(f"brain death: {shares['dormant']:.0%} of edges are dormant")
        weights = _positive_weights(g)
        if weights:
            cut = weights[int(len(weights) * (1 - ROUTABLE_SHARE))]
            proposed = round(min(cut, s.reflex * 0.9), 4)
            if proposed < s.habitual:
                reason = f"makes the top {ROUTABLE_SHARE:.0%} of positive edges routable"
                proposals.append(Proposal("traversal.habitual", s.habitual, proposed, reason))
    if n and avg_fired >= 0.9 * s.max_fired:
        findings.append(f"saturated context: {avg_fired:.1f} of {s.max_fired} nodes fire")
        proposed = round(s.fire_threshold * 1.5, 4)
        proposals.append(
            Proposal("traversal.fire_threshold", s.fire_threshold, proposed, "fewer weak nodes")
        )
    routable = counts["reflex"] + counts["habitual"]
    if n and routable and avg_fired <= avg_seeds and not findings:
        findings.append("no routing: queries fire only their seeds")
        proposed = round(s.fire_threshold * 0.5, 4)
        proposals.append(
            Proposal("traversal.fire_threshold", s.fire_threshold, proposed, "let routes fire")
        )
    return Health(
        edges=total,
        tiers=shares,
        dormant_share=shares["dormant"],
        window=n,
        avg_fired=avg_fired,
        avg_seeds=avg_seeds,
        avg_context_chars=avg_chars,
        findings=findings,
        proposals=proposals,
    )


def decide_autotune(health: Health) -> list[ConfigChanged]:
    """The config events that apply the proposals (one per key, the last proposal wins)."""
    chosen = {p.key: p.proposed for p in health.proposals}
    return [ConfigChanged(key=k, value=v) for k, v in sorted(chosen.items())]


def check(
    store: Store, *, window: int = WINDOW, apply: bool = False, actor: str = "cli"
) -> tuple[Health, list[Record]]:
    """The brain's health over its last ``window`` traces; ``apply`` records the
    proposals as config events, recorded as ``actor``.

    Returns:
        (the report, the config records written).
    Raises:
        InputError: a window below 1.
    """
    if window < 1:
        raise InputError(
            f"`window` must be at least 1, got {window}", "pass `window=100`", param="window"
        )
    store.load("config", "graph", "traces")
    reports: list[Health] = []

    def decide(_seq: int) -> list[ConfigChanged]:
        trav = store.setting(Traversal)
        refs = sorted(store.state("traces").by_id.values(), key=lambda r: r.seq)[-window:]
        recent = [rec.event for ref in refs for rec in store.log.read(ref.seq, ref.seq)]
        reports.append(assess(store.graph, [t for t in recent if isinstance(t, QueryTraced)], trav))
        return decide_autotune(reports[-1]) if apply else []

    recs = store.transact(actor_of(actor), decide)
    return reports[-1], recs
