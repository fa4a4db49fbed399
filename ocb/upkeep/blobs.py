"""Lost blobs: finding the blobs the log names that are missing or damaged, and
regenerating vector blobs by embedding again exactly the texts they were built from.

Blobs are derived data: a ``nodes_embedded`` record names its blob by sha256, and the
texts behind each row are in the log before it. What each producer embeds, for the
node as the graph holds it at that record:

* a chunk (a sync's new chunks, the parts of a maintenance split): its heading and
  its text, joined by a newline (either left out when empty);
* an injected node (CORRECTION, TEACHING, DIRECTIVE): its content and its anchor query,
  joined the same way;
* the alias a maintenance merge leaves of the absorbed chunk: a zero row.

The graph is folded up to each record that names a lost blob, so a node id that later
names other text is embedded as it was then. The embedder is the one the record names
(the built-in one, or the brain's own when it is opened with that embedder). A blob is
written only when the bytes made again hash to its name; one that cannot be reproduced
is reported and never written under a name it does not hash to. A route model's blob
is weights, not vectors: it cannot be re-embedded (the ``learned`` route mode falls
back to edge+sim without it; ``ocb train-route`` writes it back when training gives
the same model, or records a new one). Nothing is recorded in the log.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Literal

import msgspec
import numpy as np

from ocb.engine.embed import Embedder, pack_matrix
from ocb.store import Store
from ocb_events.blobs import BlobStore
from ocb_events.errors import BlobMissing
from ocb_events.protocol import EventLog
from ocb_events.schema import NodesEmbedded, RouteModelTrained
from projections import graph as graph_projection
from projections.graph import CHUNK

VECTORS, ROUTE_MODEL = "vectors", "route model"
Status = Literal["lost", "regenerated", "unreproducible"]


class LostBlob(msgspec.Struct, frozen=True):
    """A blob the log names that is missing or damaged: its name, the first record
    naming it, what it holds (``vectors`` or ``route model``), what was found
    (``lost``), or done (``regenerated``, ``unreproducible``), and why."""

    blob: str
    seq: int
    kind: str
    status: Status
    detail: str


class BlobReport(msgspec.Struct):
    """The blobs the log names (up to a seq) and those of them that were lost."""

    named: int
    lost: list[LostBlob] = msgspec.field(default_factory=list)

    @property
    def regenerated(self) -> int:
        return sum(b.status == "regenerated" for b in self.lost)

    @property
    def unrepaired(self) -> list[LostBlob]:
        """Lost blobs that are still lost."""
        return [b for b in self.lost if b.status != "regenerated"]


def _damage(blobs: BlobStore, digest: str) -> str:
    path = blobs.path(digest)
    if not path.exists() and blobs.exists(digest):  # a shared log's: fetch it here
        try:
            blobs.get(digest)
        except BlobMissing:
            return "does not match its hash"
    try:
        data = path.read_bytes()
    except OSError:
        return "is missing"
    return "" if hashlib.sha256(data).hexdigest() == digest else "does not match its hash"


def find_lost(log: EventLog, blobs: BlobStore, *, to_seq: int | None = None) -> BlobReport:
    """Every blob named by the log (up to ``to_seq``) that is missing or damaged."""
    first: dict[str, tuple[int, str]] = {}
    for rec in log.read(1, to_seq, light=True):
        ev = rec.event
        if isinstance(ev, NodesEmbedded):
            first.setdefault(ev.blob, (rec.seq, VECTORS))
        elif isinstance(ev, RouteModelTrained):
            first.setdefault(ev.blob, (rec.seq, ROUTE_MODEL))
    report = BlobReport(named=len(first))
    for digest, (seq, kind) in sorted(first.items(), key=lambda kv: (kv[1][0], kv[0])):
        why = _damage(blobs, digest)
        if why:
            report.lost.append(LostBlob(digest, seq, kind, "lost", why))
    return report


def text_of(g: graph_projection.State, node_id: str) -> str | None:
    """The text a node's vector was built from, "" for a merged alias (a zero row), or
    None for a node the graph does not hold."""
    node = g.nodes.get(node_id)
    if node is None:
        return None
    if node_id in g.merged:
        return ""
    parts = (node.heading, node.text) if node.kind == CHUNK else (node.text, node.anchor)
    return "\n".join(p for p in parts if p)


def embed_again(ev: NodesEmbedded, g: graph_projection.State, emb: Embedder) -> bytes | str:
    """The blob of ``ev`` made again, or why it cannot be."""
    texts = [text_of(g, nid) for nid in ev.node_ids]
    unknown = [nid for nid, t in zip(ev.node_ids, texts, strict=True) if t is None]
    if unknown:
        return f"node {unknown[0]} is not in the graph at that record"
    rows = [i for i, t in enumerate(texts) if t]
    m = np.zeros((len(texts), emb.dim), dtype=np.float32)
    if rows:
        m[rows] = emb.embed([texts[i] or "" for i in rows])
    return pack_matrix(m)


def regenerate(
    log: EventLog,
    blobs: BlobStore,
    embedder_for: Callable[[str], Embedder | None],
    *,
    to_seq: int | None = None,
) -> BlobReport:
    """Find the lost blobs (see ``find_lost``) and write back every vector blob whose
    texts, embedded again, hash to its name. ``embedder_for(id)`` gives the embedder
    of that id, or None when it is not at hand."""
    report = find_lost(log, blobs, to_seq=to_seq)
    todo = {b.blob: i for i, b in enumerate(report.lost) if b.kind == VECTORS}
    for i, b in enumerate(report.lost):
        if b.kind == ROUTE_MODEL:
            why = f"{b.detail}; a route model cannot be re-embedded: run ocb train-route"
            report.lost[i] = msgspec.structs.replace(b, status="unreproducible", detail=why)
    if not todo:
        return report
    last = max(report.lost[i].seq for i in todo.values())
    g = graph_projection.initial()
    for rec in log.read(1, last, light=True):
        ev = rec.event
        if isinstance(ev, NodesEmbedded) and ev.blob in todo:
            i = todo.pop(ev.blob)
            report.lost[i] = _regenerate_one(report.lost[i], ev, g, blobs, embedder_for)
        g = graph_projection.evolve(g, rec)
    return report


def regenerate_blobs(store: Store) -> BlobReport:
    """Write back the lost vector blobs named by the store's log (up to its horizon)
    by embedding again the texts they were built from, with the store's embedder or
    the built-in one each record names. Nothing is recorded."""
    return regenerate(store.log, store.blobs, store.embedder_for, to_seq=store.horizon)


def _regenerate_one(
    lost: LostBlob,
    ev: NodesEmbedded,
    g: graph_projection.State,
    blobs: BlobStore,
    embedder_for: Callable[[str], Embedder | None],
) -> LostBlob:
    emb = embedder_for(ev.embedder_id)
    if emb is None:
        why = f"embedder {ev.embedder_id} is not at hand; open the brain with it"
        return msgspec.structs.replace(lost, status="unreproducible", detail=why)
    got = embed_again(ev, g, emb)
    if isinstance(got, str):
        return msgspec.structs.replace(lost, status="unreproducible", detail=got)
    digest = hashlib.sha256(got).hexdigest()
    if digest != lost.blob:
        why = f"embedding its {len(ev.node_ids)} text(s) again gives blob {digest[:12]}"
        return msgspec.structs.replace(lost, status="unreproducible", detail=why)
    blobs.path(lost.blob).unlink(missing_ok=True)  # a damaged copy; put writes anew
    blobs.put(got)
    detail = f"re-embedded {len(ev.node_ids)} text(s) with {emb.id}"
    return msgspec.structs.replace(lost, status="regenerated", detail=detail)


def restore_lost_vectors(store: Store) -> int:
    """Before a re-run of init syncs: regenerate lost blobs when a vector in force
    lost its blob (warning about any that cannot be), and say how many were."""
    if store.log.last_seq == 0:
        return 0
    rows = store.state("vectors").rows
    if all(store.blobs.exists(b) for b in sorted({r.blob for r in rows.values()})):
        return 0
    report = regenerate_blobs(store)
    for b in report.unrepaired:
        store.warn(f"blob {b.blob[:12]} ({b.kind}, seq {b.seq}) {b.detail}")
    return report.regenerated
