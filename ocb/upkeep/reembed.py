"""Switching a brain's embedder: every vector made again by the new one, recorded in
one append (the embedder, then the vectors), or nothing when the embedder fails."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from hashlib import sha256

import numpy as np

from ocb.engine.embed import Embedder, Matrix, pack_matrix
from ocb.engine.embedders import embedder_from_spec, embedder_spec
from ocb.reports import ReembedReport
from ocb.store import Decision, Store
from ocb.upkeep.blobs import text_of
from ocb_events.schema import EmbedderConfigured, Event, NodesEmbedded

BATCH = 256
Progress = Callable[[str, int, int], None]


def reembed(store: Store, spec: str, progress: Progress | None = None) -> ReembedReport:
    """Embed every node that holds a vector with the embedder ``spec`` names and record
    the switch.

    Raises:
        InputError: an unknown spec.
        EmbedderUnavailable: the embedder failed (nothing was recorded).
    """
    embedder = embedder_from_spec(spec, cache_dir=store.path / "cache")
    store.load("graph", "vectors")
    got: list[tuple[str, int]] = []

    def decide(_seq: int) -> Decision:
        before = store.state("vectors").embedder_id
        if before == embedder.id:
            got.append((before, 0))
            return Decision(())
        decision = _switch(store, embedder, progress)
        got.append((before, _embedded(decision.events)))
        return decision

    recs = store.transact("reembed", decide)
    before, n = got[-1]
    if not recs:
        return ReembedReport(before, before, embedder_spec(embedder), 0, 0)
    store.use_embedder(embedder)
    return ReembedReport(before, embedder.id, embedder_spec(embedder), n, store.log.last_seq)


def _embedded(events: Sequence[Event]) -> int:
    """How many vectors ``events`` record."""
    return sum(len(ev.node_ids) for ev in events if isinstance(ev, NodesEmbedded))


def _switch(store: Store, embedder: Embedder, progress: Progress | None) -> Decision:
    """The records of a switch to ``embedder``: the embedder, then every vector that the
    brain holds (or, on a brain that holds none yet, of every node) made again."""
    g = store.graph
    vec = store.state("vectors")
    ids = sorted(n for n in vec.rows if n in g.nodes) if vec.embedder_id else sorted(g.nodes)
    events: list[Event] = [
        EmbedderConfigured(embedder_id=embedder.id, dim=embedder.dim, spec=embedder_spec(embedder))
    ]
    blobs: list[bytes] = []
    for start in range(0, len(ids), BATCH):
        part = ids[start : start + BATCH]
        data = pack_matrix(_rows(embedder, [text_of(g, n) or "" for n in part]))
        blobs.append(data)
        events.append(
            NodesEmbedded(
                embedder_id=embedder.id, blob=sha256(data).hexdigest(), node_ids=tuple(part)
            )
        )
        if progress:
            progress("embed", min(start + BATCH, len(ids)), len(ids))
    return Decision(events, blobs)


def _rows(embedder: Embedder, texts: list[str]) -> Matrix:
    """Rows for ``texts``; an empty text (a merged alias) keeps a zero row."""
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    full = [i for i, t in enumerate(texts) if t]
    if full:
        out[full] = embedder.embed([texts[i] for i in full])
    return out
