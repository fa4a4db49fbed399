"""The learned route model: a logistic scorer of candidate edges, trained with numpy
from recorded traces, their outcomes and teacher labels.

Every decision point of a trace gives one example per candidate. A candidate is a
positive example when the policy chose it and the trace's outcome was positive, or when
a teacher scored it above 0; a negative one when it was chosen under a negative outcome,
passed over under a positive one (at half weight), or scored below 0 by a teacher.
Examples weigh ``|reward| * source weight`` (teacher labels: ``|score| * teacher
weight``).

Features per candidate (in this order): the damped edge weight, the edge's relevance,
the cosine of the query with the target and with the source node (negative cosines
count as 0, as in seeding), and a bias. The
model's logit replaces the edge logit in the ``learned`` route mode; tiers still come
from the damped weight. Training is deterministic: zero initialisation, full-batch
gradient descent for a fixed number of steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec
import numpy as np
import numpy.typing as npt

from ocb.engine.embed import Embedder
from ocb.engine.search import SearchIndex
from ocb.settings import Learning
from ocb_events.schema import (
    STOP,
    OutcomeRecorded,
    QueryTraced,
    Record,
    Retracted,
    TeacherLabeled,
)
from projections.graph import State as GraphState

if TYPE_CHECKING:
    pass

FEATURES = ("weight", "relevance", "cos_target", "cos_source", "bias")
STEPS = 400
LEARNING_RATE = 0.5
L2 = 1e-3


class RouteWeights(msgspec.Struct, frozen=True):
    """A trained model as stored in its blob."""

    features: tuple[str, ...]
    weights: tuple[float, ...]


class RouteScorer(msgspec.Struct, frozen=True):
    """Scores a candidate edge from its features (the ``learned`` route mode)."""

    weights: tuple[float, ...]

    def __call__(self, eff: float, relevance: float, cos_t: float, cos_s: float) -> float:
        w = self.weights
        return w[0] * eff + w[1] * relevance + w[2] * cos_t + w[3] * cos_s + w[4]


def encode_model(weights: npt.NDArray[np.float64]) -> bytes:
    """The blob of a trained model."""
    return msgspec.msgpack.encode(RouteWeights(FEATURES, tuple(float(x) for x in weights)))


def load_scorer(blob: bytes) -> RouteScorer:
    """The scorer of a stored model.

    Raises:
        ValueError: the blob is not a route model with this version's features.
    """
    model = msgspec.msgpack.decode(blob, type=RouteWeights)
    if model.features != FEATURES:
        raise ValueError(f"route model features {model.features} are not {FEATURES}")
    return RouteScorer(model.weights)


class Examples(msgspec.Struct):
    """Feature rows, labels in {0, 1} and example weights."""

    x: list[list[float]] = msgspec.field(default_factory=list)
    y: list[float] = msgspec.field(default_factory=list)
    w: list[float] = msgspec.field(default_factory=list)

    def add(self, row: list[float], label: float, weight: float) -> None:
        if weight > 0:
            self.x.append(row)
            self.y.append(label)
            self.w.append(weight)


class _Labels(msgspec.Struct):
    outcomes: list[float] = msgspec.field(default_factory=list)
    teacher: list[TeacherLabeled] = msgspec.field(default_factory=list)


def _labelled(records: Iterator[Record], s: Learning) -> Iterator[tuple[QueryTraced, _Labels]]:
    """Each trace with its outcome rewards and teacher labels, once the log is read
    (outcomes and labels retracted later in the log are left out)."""
    traces: dict[str, QueryTraced] = {}
    given: list[tuple[int, OutcomeRecorded | TeacherLabeled]] = []
    retracted: set[int] = set()
    for rec in records:
        ev = rec.event
        if isinstance(ev, QueryTraced):
            traces[ev.trace_id] = ev
        elif isinstance(ev, OutcomeRecorded | TeacherLabeled) and ev.trace_id in traces:
            given.append((rec.seq, ev))
        elif isinstance(ev, Retracted):
            retracted.add(ev.target_seq)
    labels: dict[str, _Labels] = {}
    for seq, ev in given:
        got = labels.setdefault(ev.trace_id, _Labels()) if seq not in retracted else None
        if got is not None and isinstance(ev, OutcomeRecorded):
            got.outcomes.append(ev.reward * s.source_weight(ev.source))
        elif got is not None and isinstance(ev, TeacherLabeled):
            got.teacher.append(ev)
    for tid in sorted(labels):
        yield traces[tid], labels[tid]


def collect_examples(
    records: Iterator[Record],
    graph: GraphState,
    index: SearchIndex,
    embedder: Embedder,
    s: Learning,
) -> Examples:
    """Training examples from every trace that has an outcome or a teacher label."""
    ex = Examples()
    for trace, got in _labelled(records, s):
        qvec = embedder.embed([trace.query])[0]
        cos = np.maximum(index.cosine(qvec), 0.0)  # as seeding and routing see it

        def sim(node: str, cos: npt.NDArray[np.float32] = cos) -> float:
            i = index.pos.get(node)
            return float(cos[i]) if i is not None else 0.0

        damping = trace.params.damping
        for st in trace.steps:
            rows = {
                c.target: [
                    c.weight * damping**c.uses,
                    _relevance(graph, st.node, c.target),
                    sim(c.target),
                    sim(st.node),
                    1.0,
                ]
                for c in st.candidates
            }
            for r in got.outcomes:
                for target, row in sorted(rows.items()):
                    if target == st.chosen:
                        ex.add(row, 1.0 if r > 0 else 0.0, abs(r))
                    elif r > 0:  # passed over on a good route
                        ex.add(row, 0.0, r / 2)
            for lab in got.teacher:
                if lab.node != st.node or lab.hop != st.hop:
                    continue
                for target, score in zip(lab.targets, lab.scores, strict=True):
                    if target in rows and target != STOP:
                        weight = abs(score) * s.source_weight("teacher")
                        ex.add(rows[target], 1.0 if score > 0 else 0.0, weight)
    return ex


def _relevance(graph: GraphState, source: str, target: str) -> float:
    edge = graph.out.get(source, {}).get(target)
    return edge.relevance if edge is not None else 0.0


def fit(ex: Examples) -> tuple[npt.NDArray[np.float64], float]:
    """Weighted logistic regression by full-batch gradient descent: (weights, the
    weighted accuracy on the training examples)."""
    x = np.asarray(ex.x, dtype=np.float64)
    y = np.asarray(ex.y, dtype=np.float64)
    w = np.asarray(ex.w, dtype=np.float64)
    w = w / w.sum()
    theta = np.zeros(x.shape[1])
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ theta)))
        grad = x.T @ (w * (p - y)) + L2 * theta
        theta -= LEARNING_RATE * grad
    p = 1.0 / (1.0 + np.exp(-(x @ theta)))
    accuracy = float(np.sum(w * ((p >= 0.5) == (y >= 0.5))))
    return theta, accuracy
