"""Deciding an outcome: the trajectory of a trace and the edge deltas it causes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ocb.engine.learning import decide_deltas, group_by_source
from ocb.engine.policy import tier_of
from ocb.settings import REWARD_SOURCES, Learning, Traversal
from ocb_events.errors import InputError, unknown
from ocb_events.schema import (
    Candidate,
    EdgesUpdated,
    Event,
    OutcomeRecorded,
    Step,
)
from projections.graph import State


def check_outcome(outcome: float) -> float:
    """The outcome as a float in [-1, 1].

    Raises:
        InputError: NaN, infinite or out of range.
    """
    if (
        not isinstance(outcome, (int, float))
        or not math.isfinite(outcome)
        or not -1 <= outcome <= 1
    ):
        raise InputError(
            f"outcome must be a number in [-1, 1], got {outcome}",
            "use --outcome 1 for a good answer, -1 for a bad one",
        )
    return float(outcome)


def steps_from_ids(graph: State, ids: Sequence[str], s: Traversal) -> list[Step]:
    """A trajectory through explicitly listed nodes: one step per consecutive pair
    joined by an edge, with the node's current edges as candidates.

    Raises:
        InputError: an id names no node.
    """
    for nid in ids:
        if nid not in graph.nodes:
            raise unknown("node", nid, sorted(graph.nodes), "list node ids from `ocb query --json`")
    steps: list[Step] = []
    for hop, (a, b) in enumerate(zip(ids, ids[1:], strict=False), 1):
        out = graph.out.get(a, {})
        if b not in out:
            continue
        cands = [
            Candidate(target=v, weight=e.weight, logit=e.weight, tier=tier_of(e.weight, s))
            for v, e in sorted(out.items())
            if v == b or (e.weight > s.inhibitory and tier_of(e.weight, s) != "dormant")
        ]
        steps.append(
            Step(
                hop=hop,
                node=a,
                candidates=tuple(cands),
                stop_logit=graph.stop.get(a, 0.0),
                chosen=b,
            )
        )
    return steps


def decide_learn(
    steps: Sequence[Step],
    reward: float,
    s: Learning,
    *,
    source: str,
    damping: float,
    tau: float,
    outcome_seq: int,
    baselines: Mapping[str, float] | None = None,
    trace_id: str = "",
    chat_id: str = "",
    fired_ids: Sequence[str] = (),
    request_id: str = "",
) -> list[Event]:
    """The outcome and the weight changes it causes (cause_seq = the outcome's seq),
    with the new reward baselines of the nodes it passed through.

    Raises:
        InputError: a bad outcome or reward source.
    """
    reward = check_outcome(reward)
    if source not in REWARD_SOURCES:
        raise InputError(
            f"unknown reward source {source!r}", f"use one of: {', '.join(REWARD_SOURCES)}"
        )
    events: list[Event] = [
        OutcomeRecorded(
            reward=reward,
            source=source,  # type: ignore[arg-type]
            trace_id=trace_id,
            chat_id=chat_id,
            fired_ids=tuple(fired_ids),
            request_id=request_id,
        )
    ]
    d = decide_deltas(
        steps, reward, s, source=source, damping=damping, tau=tau, baselines=baselines
    )
    if d.deltas or d.baselines:
        events.append(
            EdgesUpdated(
                updates=group_by_source(d.deltas),
                rule=s.rule,
                cause_seq=outcome_seq,
                params=d.params,
                baselines=d.baselines,
            )
        )
    return events
