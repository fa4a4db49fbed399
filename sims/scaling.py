"""Scaling: with fixed budgets, route length stays the same from 50 to 20,000 chunks;
traversal time per size is reported.

Synthetic workspaces of 50, 500, 2,000 and 20,000 chunks (quick: 50, 200, 1,000) are
written from eight operations topics, ten ``##`` sections (one chunk each) per file. The
same fifteen questions (three words of one of the five topics every size holds, seeded)
are asked of every brain with the default settings, whose budgets (3 hops, 30 fired
nodes, 6,000 context characters) are the point. Per size: the median number of fired
nodes, of hops and of decision steps of the recorded traces, and the median in-process
time of the same queries unrecorded (``record=False``, after one warm-up query). Times
are metrics only; they never decide the verdict. The claim holds when every walk keeps
within the budgets and the largest median of fired nodes and of hops is at most 1.5
times the smallest.
"""

from __future__ import annotations

import random
import statistics
import time

from ocb.brain import Brain
from sims.common import Result, rebuild_equal, scratch_brain, topic_files

NAME = "scaling"
CLAIM = "route length stays constant from 50 to 20,000 chunks"
TOPICS = {
    "deploy": "canary rollout helm pipeline artifact bluegreen promote staging manifest argo",
    "rollback": "revert revision hotfix bisect regression featureflag killswitch downgrade",
    "postgres": "vacuum autovacuum replica replication wal pgbouncer bloat deadlock patroni",
    "kafka": "consumer partition offset broker rebalance topic producer retention isr",
    "auth": "oauth token jwt sso session mfa saml okta refresh keycloak",
    "billing": "invoice stripe proration refund ledger subscription chargeback dunning webhook",
    "redis": "eviction keyspace sentinel ttl maxmemory lua cache failover",
    "dns": "resolver cname route53 propagation nameserver zone coredns",
}
WORDS = {k: v.split() for k, v in TOPICS.items()}
SECTIONS = 10


def questions() -> list[str]:
    rng = random.Random(7)
    present = sorted(WORDS)[:5]  # the topics of the smallest workspace's five files
    return [" ".join(rng.sample(WORDS[present[i % 5]], 3)) for i in range(15)]


def measure(brain: Brain, qs: list[str]) -> dict[str, list[float]]:
    """Per question: fired nodes, hops, steps, context chars, unrecorded query ms, and
    whether the walk stopped on the hop budget."""
    brain.query(qs[0], record=False)  # warm-up: lazy decoding, caches
    keys = ("fired", "hops", "steps", "chars", "ms", "hop_budget_stop")
    out: dict[str, list[float]] = {k: [] for k in keys}
    for q in qs:
        t0 = time.perf_counter()
        brain.query(q, record=False)
        out["ms"].append((time.perf_counter() - t0) * 1000)
        trace = brain.trace(brain.query(q).trace_id)
        out["fired"].append(len(trace.fired))
        out["hops"].append(max((st.hop for st in trace.steps), default=0))
        out["steps"].append(len(trace.steps))
        out["chars"].append(trace.context_chars)
        out["hop_budget_stop"].append(float(trace.stop_reason == "max_hops"))
    return out


def run(quick: bool = False) -> Result:
    sizes = [50, 200, 1000] if quick else [50, 500, 2000, 20000]
    qs = questions()
    per_size: dict[int, dict[str, list[float]]] = {}
    nodes: dict[int, int] = {}
    rebuilt = True
    budgets_kept = True
    for size in sizes:
        with scratch_brain(topic_files(WORDS, size // SECTIONS, SECTIONS, seed=2)) as brain:
            trav = brain.store.settings()[0]
            got = measure(brain, qs)
            nodes[size] = len(brain.graph.nodes)
            budgets_kept = budgets_kept and (
                max(got["fired"]) <= trav.max_fired
                and max(got["hops"]) <= trav.max_hops
                and max(got["chars"]) <= trav.max_context_chars
            )
            per_size[size] = got
            rebuilt = rebuilt and rebuild_equal(brain)
    med = {k: [statistics.median(per_size[s][k]) for s in sizes] for k in per_size[sizes[0]]}
    spread = {k: max(med[k]) / max(1e-9, min(med[k])) for k in ("fired", "hops")}
    return Result(
        name=NAME,
        claim=CLAIM,
        passed=budgets_kept and all(nodes[s] == s for s in sizes) and max(spread.values()) <= 1.5,
        metrics={
            "fired_max_over_min": round(spread["fired"], 3),
            "hops_max_over_min": round(spread["hops"], 3),
            "median_fired_by_size": dict(zip(map(str, sizes), med["fired"], strict=True)),
            "median_query_ms_by_size": {
                str(s): round(ms, 3) for s, ms in zip(sizes, med["ms"], strict=True)
            },
            "median_hops_by_size": dict(zip(map(str, sizes), med["hops"], strict=True)),
            "median_steps_by_size": dict(zip(map(str, sizes), med["steps"], strict=True)),
            "budgets_kept": budgets_kept,
            "share_stopped_by_max_hops": round(
                statistics.mean(x for s in sizes for x in per_size[s]["hop_budget_stop"]), 3
            ),
            "chunks": [nodes[s] for s in sizes],
        },
        series={f"fired nodes @ {s} chunks": per_size[s]["fired"] for s in sizes},
        rebuild_equal=rebuilt,
        quick=quick,
    )
