"""Static versus learning: outcomes raise the policy's confidence in the answer route
above what the same graph gives without learning.

The workspace holds a four-step credential rotation runbook among unrelated notes. As
in ``deploy_pipeline`` the forward edges between steps are set to 0.4 and the backward
ones to 0.2; the answer route is the three forward hops from the first step to the
last. Two brains answer the same questions: the static one only queries (its traces
are recorded, no outcome ever is), the learning one scores every answer +1 (a human
outcome on the recorded trace).

Path confidence is read from each recorded trace: at every route node, the policy's
probability of the next route node (``ocb.engine.learning.softmax`` of the step's candidate
logits and STOP logit at the trace's tau), multiplied along the route; a route node
the walk never decided at contributes 0. The answer node's activation (its score among
the results, 0 when it did not fire) is reported too: activation flows as that same
probability from a seed of activation 1, so the two agree while the walk takes the
route. Settings: one seed, policy-gradient learning (``learning.rule`` pg) with its
default parameters.
"""

from __future__ import annotations

from ocb.engine.policy import softmax
from ocb_events.schema import QueryTraced
from sims.common import Result, connect, paragraphs, rebuild_equal, scratch_brain

NAME = "static_vs_learning"
CLAIM = "learned routes raise path confidence above the static baseline"
STEPS = [
    "Create the new credential in the vault under a dated name.",
    "Roll the new credential out to every service that reads it.",
    "Watch the authentication errors until every client has switched.",
    "Revoke the old credential and record the rotation date.",
]
FILLER = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
SETTINGS = {"traversal.max_seeds": 1, "learning.rule": "pg"}
IDS = [f"runbooks/rotate.md::{i}" for i in range(len(STEPS) + 1)]
ROUTE = list(zip(IDS[1:], IDS[2:], strict=False))
QUESTION = "create the new credential in the vault"


def workspace() -> dict[str, str]:
    steps = "\n\n".join(f"## Step {i + 1}\n\n{body}" for i, body in enumerate(STEPS))
    files = {"runbooks/rotate.md": f"# Rotate a credential\n\nThe yearly chore.\n\n{steps}\n"}
    for i, text in enumerate(paragraphs(FILLER, 10, seed=3)):
        files[f"notes/n{i:02d}.md"] = f"# Note {i}\n\n{text}\n"
    return files


def path_confidence(trace: QueryTraced) -> float:
    """The product of the policy's probabilities along the answer route."""
    conf = 1.0
    for u, v in ROUTE:
        step = next((st for st in trace.steps if st.node == u), None)
        if step is None:
            return 0.0
        logits = [c.logit for c in step.candidates] + [step.stop_logit]
        probs = softmax(logits, trace.params.tau)
        targets = [c.target for c in step.candidates]
        conf *= probs[targets.index(v)] if v in targets else 0.0
    return conf


def session(learn: bool, queries: int) -> tuple[list[float], list[float], bool]:
    """Path confidence and answer activation per query, and the rebuild check."""
    with scratch_brain(workspace(), SETTINGS) as brain:
        back = [(b, a, 0.2) for a, b in zip(IDS, IDS[1:], strict=False)]
        connect(brain, [(a, b, 0.4) for a, b in ROUTE] + back)
        conf: list[float] = []
        act: list[float] = []
        for _ in range(queries):
            answer = brain.query(QUESTION, top=10)
            trace = brain.trace(answer.trace_id)
            conf.append(path_confidence(trace))
            act.append(next((h.score for h in answer.results if h.id == IDS[-1] and h.fired), 0.0))
            if learn:
                brain.learn(1.0, trace_id=trace.trace_id)
        return conf, act, rebuild_equal(brain)


def run(quick: bool = False) -> Result:
    queries = 12 if quick else 30
    static, static_act, ok_static = session(False, queries)
    learned, learned_act, ok_learned = session(True, queries)
    return Result(
        name=NAME,
        claim=CLAIM,
        passed=learned[-1] > static[-1]
        and learned_act[-1] > static_act[-1]
        and all(a >= b for a, b in zip(learned, static, strict=True)),
        metrics={
            "learned_confidence": learned[-1],
            "static_confidence": static[-1],
            "learned_answer_activation": learned_act[-1],
            "static_answer_activation": static_act[-1],
            "first_confidence": learned[0],
            "queries": queries,
        },
        series={
            "static path confidence": static,
            "learned path confidence": learned,
            "static answer activation": static_act,
            "learned answer activation": learned_act,
        },
        rebuild_equal=ok_static and ok_learned,
        quick=quick,
    )
