"""Domain separation: a mixed workload over two domains leaves only a handful of
cross-domain edges that a walk can take, and creates none.

The workspace holds notes on two domains with disjoint vocabularies, database
operations and frontend design (eight files of four sections), and two notes that
genuinely cover both: an admin dashboard and a data table, each with a section on the
query side and one on the page side, so init joins the domains by a few sibling edges.
A chunk belongs to the domain whose words it uses most. The agent alternates questions
from the two domains (three words of one domain each, seeded) and scores every answer
+1 (a human outcome on the recorded trace).

In this product learning never creates an edge (edges come from init, injections and
maintenance); it only moves weights. So the claim is measured as: the edge set is the
same before and after the workload, and the cross-domain edges that are routable
(habitual or reflex, weight >= traversal.habitual) are at most five and at most a
quarter of the routable within-domain edges. Default settings throughout, but for the
learning rule: the policy gradient over the edges walked (``learning.rule`` pg).
"""

from __future__ import annotations

import random
import re

from ocb.brain import Brain
from sims.common import Result, rebuild_equal, scratch_brain, topic_files

NAME = "domain_separation"
CLAIM = "a mixed workload leaves only a handful of routable cross-domain edges"
SETTINGS = {"learning.rule": "pg"}
DOMAINS = {
    "database": "postgres vacuum autovacuum replica replication wal btree planner transaction "
    "deadlock pgbouncer backup snapshot restore schema migration tablespace bloat checkpoint "
    "sequence".split(),
    "frontend": "css grid flexbox typography font kerning palette contrast button modal layout "
    "spacing component responsive breakpoint icon animation hover theme accessibility".split(),
}
BRIDGES = {
    "notes/admin-dashboard.md": "# Admin dashboard\n\n## Why the dashboard is slow\n\n"
    "The planner picks a sequence scan on the replica; a btree on the sort column and a "
    "pgbouncer pool fix the backup window too.\n\n## How the dashboard looks\n\n"
    "The grid layout reflows on hover; fix the row spacing, keep the palette contrast "
    "and the font kerning.\n",
    "notes/data-table.md": "# Data table\n\n## Paging the rows\n\nPage through postgres "
    "with the btree, not offsets: the planner and the replica stay fast and vacuum keeps "
    "bloat down.\n\n## Drawing the rows\n\nThe table component keeps a fixed row height so "
    "the flexbox layout never reflows; icons and buttons share one theme.\n",
}


def workspace() -> dict[str, str]:
    return {**topic_files(DOMAINS, 8, 4, seed=1), **BRIDGES}


def domain_of(text: str) -> str:
    words = set(re.findall(r"[a-z]+", text.lower()))
    db, fe = (len(words & set(DOMAINS[d])) for d in ("database", "frontend"))
    return "database" if db > fe else "frontend" if fe > db else "none"


def routable(brain: Brain, dom: dict[str, str], tier: str = "habitual") -> tuple[int, int]:
    """Edges at or above a tier's threshold: (cross-domain, within-domain)."""
    floor = getattr(brain.store.settings()[0], tier)
    cross = within = 0
    for a, targets in brain.graph.out.items():
        for b, e in targets.items():
            if e.weight >= floor:
                cross += dom[a] != dom[b]
                within += dom[a] == dom[b]
    return cross, within


def run(quick: bool = False) -> Result:
    queries = 40 if quick else 200
    rng = random.Random(5)
    with scratch_brain(workspace(), SETTINGS) as brain:
        g = brain.graph
        dom = {n: domain_of(g.nodes[n].text) for n in sorted(g.nodes)}
        before = sorted((a, b) for a, ts in g.out.items() for b in ts)
        cross0, within0 = routable(brain, dom)
        series: dict[str, list[float]] = {"cross-domain routable": [], "within-domain routable": []}
        spanning = 0
        for q in range(queries):
            words = DOMAINS["database" if q % 2 == 0 else "frontend"]
            answer = brain.query(" ".join(rng.sample(words, 3)), top=3)
            spanning += len({dom[n] for n in answer.fired}) > 1
            brain.learn(1.0, trace_id=answer.trace_id)
            cross, within = routable(brain, dom)
            series["cross-domain routable"].append(cross)
            series["within-domain routable"].append(within)
        after = sorted((a, b) for a, ts in g.out.items() for b in ts)
        return Result(
            name=NAME,
            claim=CLAIM,
            passed=before == after and cross <= 5 and 4 * cross <= within,
            metrics={
                "cross_routable_after": cross,
                "within_routable_after": within,
                "edges_created_by_workload": len(set(after) - set(before)),
                "cross_routable_at_init": cross0,
                "within_routable_at_init": within0,
                "edges": len(after),
                "cross_reflex_after": routable(brain, dom, "reflex")[0],
                "queries_firing_both_domains": spanning,
                "queries": queries,
            },
            series=series,
            rebuild_equal=rebuild_equal(brain),
            quick=quick,
        )
