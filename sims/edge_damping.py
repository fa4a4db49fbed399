"""Edge damping: with lambda = 0.3 a branch target is reached in a cyclic graph; with
lambda = 1.0 the traversal loops.

Two chunks point at each other with reflex edges (0.9) and the second also has a weak
branch (0.3) to a third. Reusing an edge within one walk damps it by lambda^k: at 0.3
the loop edge drops out of the reflex tier on its second use, the branch gets enough of
the policy's probability to fire, and the walk ends; at 1.0 the loop never weakens, the
branch never reaches the fire threshold, and the walk bounces until the hop budget. The
same brain answers under both settings (recorded as config events).
"""

from __future__ import annotations

from ocb.brain import Brain
from ocb_events.schema import QueryTraced
from sims.common import Result, connect, rebuild_equal, scratch_brain

NAME = "edge_damping"
CLAIM = "lambda 0.3 reaches the branch; lambda 1.0 loops"
FILES = {
    "a.md": "# Loop start\n\nRotate the signing keys on the gateway.\n",
    "b.md": "# Loop partner\n\nVerify the keyring mirrors.\n",
    "c.md": "# Branch\n\nPublish the new trust bundle to clients.\n",
}
A, B, C = "a.md::0", "b.md::0", "c.md::0"
SETTINGS = {
    "traversal.max_seeds": 1,
    "traversal.max_hops": 8,
    "traversal.fire_threshold": 0.23,
    "traversal.visit_penalty": 0.0,
    "indexing.similar_k": 0,
}


def walk(brain: Brain, damping: float) -> QueryTraced:
    brain.set_config("traversal.damping", damping)
    return brain.trace(brain.query("rotate the signing keys", top=3).trace_id)


def run(quick: bool = False) -> Result:
    with scratch_brain(FILES, SETTINGS) as brain:
        connect(brain, [(A, B, 0.9), (B, A, 0.9), (B, C, 0.3)])
        damped, looping = walk(brain, 0.3), walk(brain, 1.0)
        loop_nodes = [st.node for st in looping.steps]
        alternating = all(n == (A if i % 2 == 0 else B) for i, n in enumerate(loop_nodes))
        return Result(
            name=NAME,
            claim=CLAIM,
            passed=C in damped.fired
            and C not in looping.fired
            and looping.stop_reason == "max_hops"
            and alternating,
            metrics={
                "damped_fired": len(damped.fired),
                "damped_steps": len(damped.steps),
                "looping_steps": len(looping.steps),
                "looping_stop": looping.stop_reason,
            },
            rebuild_equal=rebuild_equal(brain),
            quick=quick,
        )
