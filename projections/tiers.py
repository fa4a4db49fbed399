"""The edge tiers: the one tier rule (traversal, health, the doctor and the history's
diffs all use it), the tier counts and shares of a graph, and the dormant share past
which routing has died.

A tier is read from a weight (traversal passes the damped weight) under the bounds in
force (``traversal.reflex``, ``.habitual`` and ``.inhibitory``): reflex is followed
automatically, habitual by the policy, dormant is skipped, inhibitory suppresses."""

from __future__ import annotations

import msgspec

from projections.graph import State as GraphState

__all__ = ["DORMANT_LIMIT", "TIERS", "Tiers", "tier_counts", "tier_shares"]

TIERS = ("reflex", "habitual", "dormant", "inhibitory")
"""The edge tiers, strongest first."""

DORMANT_LIMIT = 0.9
"""Past this share of dormant edges routing stops at the seeds (brain death)."""


class Tiers(msgspec.Struct, frozen=True):
    """The tier bounds of a point in history (``traversal.reflex``, ``.habitual`` and
    ``.inhibitory`` in force there); the defaults are the settings' defaults."""

    reflex: float = 0.6
    habitual: float = 0.2
    inhibitory: float = -0.01

    def of(self, weight: float) -> str:
        """The tier of a weight (the one tier rule: traversal, health and diffs)."""
        if weight <= self.inhibitory:
            return "inhibitory"
        if weight >= self.reflex:
            return "reflex"
        if weight >= self.habitual:
            return "habitual"
        return "dormant"


def tier_counts(g: GraphState, tiers: Tiers) -> dict[str, int]:
    """The number of edges in each tier, every tier named (strongest first)."""
    counts = dict.fromkeys(TIERS, 0)
    for targets in g.out.values():
        for e in targets.values():
            counts[tiers.of(e.weight)] += 1
    return counts


def tier_shares(counts: dict[str, int]) -> dict[str, float]:
    """The share of the edges in each tier, of their ``tier_counts`` (all 0 without
    edges)."""
    total = sum(counts.values())
    return {k: (v / total if total else 0.0) for k, v in counts.items()}
