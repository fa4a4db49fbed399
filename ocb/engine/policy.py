"""The route policy's two rules, one home each: the softmax over an edge's logits and
the tier of a damped weight (whose bounds are ``projections.tiers.Tiers``, shared with
the history's diffs, health, the doctor and the analytics views)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ocb.settings import Traversal
from projections.tiers import Tiers


def softmax(logits: Sequence[float], tau: float) -> list[float]:
    """Softmax of ``logits / tau``, stable for any magnitude."""
    m = max(logits)
    ex = [math.exp((x - m) / tau) for x in logits]
    total = sum(ex)
    return [x / total for x in ex]


def tiers(s: Traversal) -> Tiers:
    """The tier bounds of traversal settings ``s``."""
    return Tiers(reflex=s.reflex, habitual=s.habitual, inhibitory=s.inhibitory)


def tier_of(weight: float, s: Traversal) -> str:
    """The tier of a (damped) weight under settings ``s``."""
    return tiers(s).of(weight)
