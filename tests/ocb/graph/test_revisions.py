"""An edited chunk keeps its id, its learned edges and weights, and gets a new vector;
the brain's chunks still equal a fresh init of the edited workspace."""

from __future__ import annotations

from pathlib import Path

from ocb.brain import Brain
from ocb_events.clock import TickClock
from tests.ocb.support import chunk_view


def test_a_small_edit_keeps_what_a_chunk_learned(built: Path, tmp_path: Path) -> None:
    with Brain(built, clock=TickClock(start_ns=1_900_000_000_000_000_000)) as b:
        ans = b.query("how do I roll back a bad deploy", top=3)
        b.learn(1.0, trace_id=ans.trace_id, rule="pg")
        g = b.graph
        node = next(g.nodes[i] for i in ans.fired if g.out.get(i) and g.nodes[i].path)
        edges = {t: e.weight for t, e in sorted(g.out[node.id].items())}
        vec = b.store.vectors_of([node.id])
        ws = Path(g.workspace)
        path = ws / node.path
        words = node.text.split()
        last = words[-1]
        text = path.read_text()
        assert text.count(node.text) == 1
        path.write_text(text.replace(node.text, node.text + " Also page the owner."))
        report = b.sync(ws)
        assert report.files_changed == 1
        now = b.graph.nodes[node.id]
        assert now.text.endswith("Also page the owner.") and last in now.text
        assert {t: e.weight for t, e in sorted(b.graph.out[node.id].items())} == edges
        assert (b.store.vectors_of([node.id]) != vec).any()
        mine = chunk_view(b)
    fresh, _ = Brain.init(tmp_path / "fresh", ws)
    with fresh:
        assert chunk_view(fresh) == mine
