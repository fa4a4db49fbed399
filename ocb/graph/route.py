"""Training the route model from the recorded history and recording it."""

from __future__ import annotations

import hashlib

import msgspec

from ocb.engine.route_model import collect_examples, encode_model, fit
from ocb.settings import Learning, actor_of
from ocb.store import Decision, Store
from ocb_events.errors import InputError
from ocb_events.schema import (
    RouteModelTrained,
)

FEATURES = ("weight", "relevance", "cos_target", "cos_source", "bias")
STEPS = 400
LEARNING_RATE = 0.5
L2 = 1e-3


class TrainReport(msgspec.Struct):
    """A route model trained, and the seq it is recorded at. ``recorded`` is False when
    the model in force is identical (same blob): nothing was recorded and ``seq`` is
    that model's."""

    examples: int
    accuracy: float
    features: list[str]
    weights: list[float]
    seq: int
    recorded: bool = True


def train(store: Store, *, min_examples: int = 20, actor: str = "cli") -> TrainReport:
    """Train the route model on every trace with an outcome or teacher label and record
    it as ``actor`` (the ``learned`` route mode uses it from then on). A model identical
    to the one in force is not recorded again (its blob is written back if it was lost).

    Raises:
        InputError: fewer than ``min_examples`` labelled decisions, or ``min_examples``
            below 1.
    """
    if min_examples < 1:
        raise InputError(
            f"`min_examples` must be at least 1, got {min_examples}",
            "pass `min_examples=20`",
            param="min_examples",
        )
    store.load("config", "graph", "vectors")
    got: list[TrainReport] = []

    def decide(seq: int) -> Decision:
        report, blob = _trained(store, seq, min_examples)
        digest = hashlib.sha256(blob).hexdigest()
        current = store.graph.route_model
        if current is not None and current.blob == digest:
            store.blobs.put(blob)
            got.append(msgspec.structs.replace(report, seq=current.seq, recorded=False))
            return Decision(())
        got.append(report)
        event = RouteModelTrained(
            blob=digest,
            features=FEATURES,
            examples=report.examples,
            trained_to_seq=seq,
            accuracy=round(report.accuracy, 6),
        )
        return Decision([event], [blob])

    recs = store.transact(actor_of(actor), decide)
    return msgspec.structs.replace(got[-1], seq=recs[0].seq) if recs else got[-1]


def _trained(store: Store, seq: int, min_examples: int) -> tuple[TrainReport, bytes]:
    """The model trained on the history up to ``seq``, and its blob.

    Raises:
        InputError: fewer than ``min_examples`` labelled decisions.
    """
    learn = store.setting(Learning)
    ex = collect_examples(
        store.log.read(1, seq), store.graph, store.search_index(), store.embedder(), learn
    )
    if len(ex.y) < min_examples:
        raise InputError(
            f"only {len(ex.y)} labelled decision(s) to learn routes from",
            f"record at least {min_examples}: ocb learn on traces, or ocb teach --apply",
        )
    weights, accuracy = fit(ex)
    report = TrainReport(len(ex.y), accuracy, list(FEATURES), [float(w) for w in weights], 0)
    return report, encode_model(weights)
