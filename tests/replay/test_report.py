"""``ocb report``'s canned analyses agree with the graph: edges per tier count the
edges there are, never one that was removed."""

from __future__ import annotations

from pathlib import Path

from ocb.brain import Brain
from ocb_events.clock import TickClock


def tiers(b: Brain) -> list[int]:
    """The number of edges at the end of each day, summed over the tiers."""
    (table,) = [t for t in b.report().tables if t.name == "tiers_per_day"]
    assert table.columns == ["day", "reflex", "habitual", "dormant", "inhibitory"]
    return [sum(int(n) for n in row[1:]) for row in table.rows]


def edge_count(b: Brain) -> int:
    return sum(len(targets) for targets in b.graph.out.values())


def test_edges_per_tier_leave_out_removed_edges(built: Path, workspace: Path) -> None:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        before = edge_count(b)
        assert tiers(b) == [before]
        answer = b.query("how do I roll back a bad deploy")
        b.learn(1.0, trace_id=answer.trace_id, rule="pg")  # edges change on the new day...
        (workspace / "runbooks" / "rollback.md").unlink()  # ...and go with their file
        b.sync(workspace)
        after = edge_count(b)
        assert after < before
        assert tiers(b) == [before, after]
