"""Switching a brain's embedder: every vector made again by the new one, recorded in
one append (the embedder, then the vectors), or nothing when the embedder fails."""

from __future__ import annotations

from collections.abc import Callable
from hashlib import sha256

import numpy as np

from ocb.engine.embed import Embedder, Matrix, pack_matrix
from ocb.engine.embedders import embedder_from_spec, embedder_spec
from ocb.reports import ReembedReport
from ocb.store import Store
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
    seq = store.log.last_seq
    vec = store.state("vectors")
    before = vec.embedder_id
    if before == embedder.id:
        return ReembedReport(before, before, embedder_spec(embedder), 0, 0)
    g = store.graph
    ids = sorted(n for n in vec.rows if n in g.nodes) if before else sorted(g.nodes)
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
    store.record(events, "reembed", expected_seq=seq, blobs=blobs)
    store.use_embedder(embedder)
    return ReembedReport(before, embedder.id, embedder_spec(embedder), len(ids), store.log.last_seq)


def _rows(embedder: Embedder, texts: list[str]) -> Matrix:
    """Rows for ``texts``; an empty text (a merged alias) keeps a zero row."""
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    full = [i for i, t in enumerate(texts) if t]
    if full:
        out[full] = embedder.embed([texts[i] for i in full])
    return out
