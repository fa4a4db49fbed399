"""The one tier rule (``projections.tiers``): the bounds, the counts and shares of a
graph's edges, as traversal, health, the doctor and the history's diffs read them."""

from __future__ import annotations

from ocb_events.schema import ChunkText, EdgesCreated, EdgeSpec, Event, FileIndexed, Record
from projections import graph
from projections.tiers import TIERS, Tiers, tier_counts, tier_shares


def graph_of(weights: list[float]) -> graph.State:
    """A chain of nodes n0 -> n1 -> ... whose edges carry ``weights``."""
    ids = [f"g.md::{i}" for i in range(len(weights) + 1)]
    chunks = tuple(
        ChunkText(id=n, text=n, text_hash=n, start_line=i + 1, end_line=i + 1)
        for i, n in enumerate(ids)
    )
    specs = tuple(
        EdgeSpec(source=a, target=b, weight=w, kind="test")
        for a, b, w in zip(ids, ids[1:], weights, strict=False)
    )
    events: list[Event] = [FileIndexed(path="g.md", content_hash="h", chunks=chunks)]
    events.append(EdgesCreated(edges=specs))
    g = graph.initial()
    for seq, ev in enumerate(events, 1):
        g = graph.evolve(g, Record(seq=seq, ts=seq, actor="test", event=ev))  # type: ignore[arg-type]
    return g


def test_the_bounds_are_inclusive_from_the_top_and_inhibitory_at_or_below() -> None:
    t = Tiers()
    got = [t.of(w) for w in (0.9, 0.6, 0.59, 0.2, 0.19, 0.0, -0.01, -0.5)]
    assert got == [
        "reflex", "reflex", "habitual", "habitual", "dormant", "dormant", "inhibitory",
        "inhibitory",
    ]  # fmt: skip


def test_counts_name_every_tier_strongest_first_and_shares_follow_them() -> None:
    g = graph_of([0.9, 0.3, 0.1, 0.05, -0.2])
    counts = tier_counts(g, Tiers())
    assert list(counts) == list(TIERS)
    assert counts == {"reflex": 1, "habitual": 1, "dormant": 2, "inhibitory": 1}
    assert tier_shares(counts) == {
        "reflex": 0.2,
        "habitual": 0.2,
        "dormant": 0.4,
        "inhibitory": 0.2,
    }
    assert tier_counts(g, Tiers(habitual=0.05))["habitual"] == 3, "the bounds in force"


def test_a_graph_without_edges_has_no_share_in_any_tier() -> None:
    counts = tier_counts(graph_of([]), Tiers())
    assert counts == dict.fromkeys(TIERS, 0) and tier_shares(counts) == dict.fromkeys(TIERS, 0.0)
