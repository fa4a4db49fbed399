"""Maintenance decisions that reshape nodes: merge near-duplicate chunks, split
oversized ones, connect nodes that have no edges.

Merge. Two chunks merge when neither is constitutional, an alias or empty; the cosine
of their vectors reaches ``merge_min_similarity``; and in the last ``merge_window``
traces they fired together every time either fired, at least ``merge_min_cofires``
times. The kept chunk is the one of higher authority (canonical over overlay), then
the older one, then the smaller id; a chunk that already absorbed others is never
absorbed itself. Pairs are taken by decreasing similarity, each chunk in at most one
merge per run. The absorbed chunk's edges are rewired to the kept one (an edge both
had keeps the stronger ``|weight|``; edges between the two are dropped). The absorbed
chunk stays as an alias that keeps its id and place in its file, so a re-sync of its
file moves or removes it like any chunk (see ``projections.graph``), and the kept chunk
cites its source in ``Node.also``. Its vector is recorded as a zero row, so doctor
finds a vector for every node and search never seeds it.

Split. A chunk longer than ``split_over_chars`` (not constitutional, not an alias, not
holding aliases) is cut at line boundaries: by the Markdown chunker with target
``split_chars`` (which also cuts a line longer than its cap at whitespace) or, when that
cannot cut it, into runs of whole lines of about that size. Each part is a new chunk
``path::n`` (fresh ordinals of its file) whose text is its file's lines
``start_line..end_line`` (from ``start_col``, for a slice of a long line), under the old
node's heading. Every
part gets a copy of the old node's outgoing edges (whichever part fires can continue
the routes it had); its incoming edges go to the first part only, where a reader
enters the text, so no other node's route policy changes (copies into every part
would split each source's probability among them). Consecutive parts are joined both
ways by sibling edges; the parts inherit the old node's authority, stop weight and
baseline, and take its place in its file. A split holds until its file changes: the
re-sync then re-chunks the file by the indexing rules.

Connect. A node with no edge in or out (an injection whose targets left, a chunk
alone in its file) gets edges to its ``connect_k`` most similar chunks (positive
cosine only) at ``connect_weight``, both ways; a CORRECTION only receives them (its
outgoing edges are its vetoes).
"""

from __future__ import annotations

from hashlib import sha256

import numpy as np

from ocb.engine.embed import Matrix, pack_matrix
from ocb.upkeep.weights import CONSTITUTIONAL, Change, OpPlan, View, setting
from ocb_events.schema import (
    ChunkText,
    EdgesCreated,
    EdgeSpec,
    Event,
    NodesEmbedded,
    NodesMerged,
    NodeSplit,
)
from projections.graph import CHUNK, Edge, Node, State as GraphState
from workspace_sync import Piece, chunk_text, split_lines, text_hash

_BLOCK = 1024
_RANK = {"canonical": 0, "overlay": 1}


def _unit(m: Matrix) -> Matrix:
    norms = np.linalg.norm(m, axis=1)
    norms[norms == 0] = 1.0
    out: Matrix = (m / norms[:, None]).astype(np.float32)
    return out


def _embedded(v: View, node_ids: list[str], matrix: Matrix, plan: OpPlan) -> None:
    data = pack_matrix(matrix)
    plan.blobs.append(data)
    plan.events.append(
        NodesEmbedded(
            embedder_id=v.embedder.id, blob=sha256(data).hexdigest(), node_ids=tuple(node_ids)
        )
    )


# --------------------------------------------------------------------------- merge


def _mergeable(g: GraphState, node_id: str) -> bool:
    n = g.nodes.get(node_id)
    return (
        n is not None
        and n.kind == CHUNK
        and bool(n.text)
        and n.authority != CONSTITUTIONAL
        and node_id not in g.merged
    )


def cofired_groups(
    g: GraphState, fired: list[tuple[str, ...]], min_cofires: int
) -> list[tuple[int, list[str]]]:
    """Mergeable chunks that fired in exactly the same traces, at least ``min_cofires``
    of them, as (number of traces, sorted ids); only groups of two or more."""
    seen: dict[str, list[int]] = {}
    for i, ids in enumerate(fired):
        for n in sorted(set(ids)):
            seen.setdefault(n, []).append(i)
    groups: dict[tuple[int, ...], list[str]] = {}
    for n in sorted(seen):
        traces = tuple(seen[n])
        if len(traces) >= min_cofires and _mergeable(g, n):
            groups.setdefault(traces, []).append(n)
    return [(len(k), m) for k, m in sorted(groups.items()) if len(m) > 1]


def _pairs(v: View, groups: list[tuple[int, list[str]]]) -> list[tuple[float, str, str, int]]:
    out: list[tuple[float, str, str, int]] = []
    for n, members in groups:
        m = _unit(v.vectors(members))
        sims = m @ m.T
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                cos = round(float(sims[i, j]), 6)
                if cos >= v.settings.merge_min_similarity:
                    out.append((cos, members[i], members[j], n))
    return sorted(out, key=lambda p: (-p[0], p[1], p[2]))


def _keeper(g: GraphState, a: str, b: str) -> tuple[str, str] | None:
    na, nb = g.nodes[a], g.nodes[b]
    if na.also and nb.also:
        return None
    if na.also or nb.also:
        return (a, b) if na.also else (b, a)

    def key(n: Node) -> tuple[int, int, str]:
        return (_RANK.get(n.authority, 1), n.created_seq, n.id)

    return (a, b) if key(na) <= key(nb) else (b, a)


def _stronger(specs: list[EdgeSpec], cur: Edge | None, src: str, dst: str, e: Edge) -> None:
    if cur is None or abs(e.weight) > abs(cur.weight):
        specs.append(EdgeSpec(source=src, target=dst, weight=e.weight, kind=e.kind))


def rewire(g: GraphState, kept: str, gone: str) -> list[EdgeSpec]:
    """The edges ``kept`` takes over from ``gone``: new ones, and stronger ones."""
    specs: list[EdgeSpec] = []
    kept_out = g.out.get(kept, {})
    gone_out = g.out.get(gone, {})
    for dst in sorted(gone_out):
        if dst != kept:
            _stronger(specs, kept_out.get(dst), kept, dst, gone_out[dst])
    for src in g.incoming(gone):
        if src != kept:
            _stronger(specs, g.out.get(src, {}).get(kept), src, kept, g.out[src][gone])
    return specs


def decide_merge(v: View) -> OpPlan:
    """Merge near-duplicate chunks that always fire together (see the module rules)."""
    s, g = v.settings, v.graph
    params = (
        setting("merge_min_similarity", s.merge_min_similarity),
        setting("merge_min_cofires", s.merge_min_cofires),
        setting("merge_window", s.merge_window),
        setting("traces", len(v.fired)),
    )
    used: set[str] = set()
    gone_ids: list[str] = []
    plan = OpPlan("merge", params, "")
    rewired = 0
    for cos, a, b, n in _pairs(v, cofired_groups(g, v.fired, s.merge_min_cofires)):
        pair = None if a in used or b in used else _keeper(g, a, b)
        if pair is None:
            continue
        kept, gone = pair
        used.update(pair)
        specs = rewire(g, kept, gone)
        rewired += len(specs)
        plan.events.append(
            NodesMerged(kept=kept, absorbed=gone, cause_seq=v.cause, edges=tuple(specs))
        )
        gone_ids.append(gone)
        note = f"cosine {cos:.3f}, {n} co-firings; now also cites {g.nodes[gone].source}"
        plan.changes.append(Change("merged", kept, gone, cos, cos, note))
    if gone_ids:
        _embedded(v, gone_ids, np.zeros((len(gone_ids), v.embedder.dim), np.float32), plan)
    plan.counts = {"merged": len(gone_ids), "rewired": rewired}
    plan.summary = (
        f"{len(gone_ids)} near-duplicate chunk(s) merged, {rewired} edge(s) rewired "
        f"({len(v.fired)} trace(s) read)"
    )
    return plan


# --------------------------------------------------------------------------- split


def split_pieces(text: str, target: int, *, markdown: bool = True) -> list[Piece]:
    """A node's text cut at line boundaries (line numbers 1-based within the text):
    the Markdown chunker's pieces, or when it cannot cut, runs of whole lines of about
    ``target`` characters. Each piece's text is exactly its lines joined by newlines."""
    pieces = chunk_text(text, markdown=markdown, target_chars=target)
    if len(pieces) > 1:
        return pieces
    lines = split_lines(text)
    runs: list[tuple[int, int]] = []
    start, end, size = -1, -1, 0
    for i, line in enumerate(lines):
        if not line.strip():
            size += 1
            continue
        n = len(line) + 1
        if start >= 0 and size + n > target:
            runs.append((start, end))
            start = -1
        if start < 0:
            start, size = i, 0
        end, size = i, size + n
    if start >= 0:
        runs.append((start, end))
    return [Piece("\n".join(lines[a : b + 1]), a + 1, b + 1) for a, b in runs]


def _splittable(g: GraphState, n: Node) -> bool:
    return (
        n.kind == CHUNK
        and n.path in g.files
        and n.id not in g.merged
        and not n.also
        and n.authority != CONSTITUTIONAL
    )


def _parts(g: GraphState, n: Node, pieces: list[Piece], free: dict[str, int]) -> list[ChunkText]:
    k = free.get(n.path, g.files[n.path].next_ordinal)
    parts: list[ChunkText] = []
    for p in pieces:
        while f"{n.path}::{k}" in g.nodes:
            k += 1
        parts.append(
            ChunkText(
                id=f"{n.path}::{k}",
                text=p.text,
                text_hash=text_hash(p.text),
                start_line=n.start_line + p.start_line - 1,
                end_line=n.start_line + p.end_line - 1,
                heading=n.heading,
                start_col=p.start_col + (n.start_col if p.start_line == 1 else 0),
            )
        )
        k += 1
    free[n.path] = k
    return parts


def _copies(
    g: GraphState, old: str, parts: list[str], split: dict[str, tuple[int, list[str]]]
) -> list[EdgeSpec]:
    """The old node's outgoing edges from every part, its incoming edges into the first
    part. A neighbour split in the same run stands for its parts (as a target: its first
    part) when its split comes first, so its parts exist; when it comes later, its own
    split copies the edge."""
    me = split[old][0]

    def mapped(other: str, *, as_target: bool) -> list[str]:
        if other not in split:
            return [other]
        pos, its = split[other]
        if pos > me:
            return []
        return its[:1] if as_target else its

    specs: list[EdgeSpec] = []
    out = g.out.get(old, {})
    for dst in sorted(out):
        e = out[dst]
        specs += [
            EdgeSpec(source=p, target=t, weight=e.weight, kind=e.kind)
            for p in parts
            for t in mapped(dst, as_target=True)
        ]
    for src in g.incoming(old):
        e = g.out[src][old]
        specs += [
            EdgeSpec(source=f, target=parts[0], weight=e.weight, kind=e.kind)
            for f in mapped(src, as_target=False)
        ]
    return specs


def decide_split(v: View) -> OpPlan:
    """Split oversized chunks at line boundaries (see the module rules)."""
    s, g = v.settings, v.graph
    params = (
        setting("split_over_chars", s.split_over_chars),
        setting("split_chars", s.split_chars),
    )
    free: dict[str, int] = {}
    cut: list[tuple[Node, list[ChunkText]]] = []
    unsplittable = 0
    for nid in sorted(g.nodes):
        n = g.nodes[nid]
        if len(n.text) <= s.split_over_chars or not _splittable(g, n):
            continue
        pieces = split_pieces(n.text, s.split_chars, markdown=not n.path.endswith(".txt"))
        if len(pieces) < 2:
            unsplittable += 1
            continue
        cut.append((n, _parts(g, n, pieces, free)))
    split = {n.id: (i, [p.id for p in parts]) for i, (n, parts) in enumerate(cut)}
    plan = OpPlan("split", params, "")
    w = v.indexing.sibling_weight
    for n, parts in cut:
        ids = [p.id for p in parts]
        specs = _copies(g, n.id, ids, split)
        for a, b in zip(ids, ids[1:], strict=False):
            specs += [
                EdgeSpec(source=a, target=b, weight=w, kind="sibling"),
                EdgeSpec(source=b, target=a, weight=w, kind="sibling"),
            ]
        plan.events.append(
            NodeSplit(node_id=n.id, parts=tuple(parts), cause_seq=v.cause, edges=tuple(specs))
        )
        longest = max(len(p.text) for p in parts)
        note = f"{len(n.text)} chars -> {len(parts)} parts of at most {longest}"
        plan.changes.append(Change("split", n.id, ", ".join(ids), len(n.text), longest, note))
    parts_all = [p for _, parts in cut for p in parts]
    if parts_all:
        texts = ["\n".join(x for x in (p.heading, p.text) if x) for p in parts_all]
        _embedded(v, [p.id for p in parts_all], v.embedder.embed(texts), plan)
    plan.changes.sort(key=lambda c: (-c.before, c.source))
    plan.counts = {"split": len(cut), "parts": len(parts_all), "unsplittable": unsplittable}
    plan.summary = (
        f"{len(cut)} chunk(s) over {s.split_over_chars} chars split into {len(parts_all)} "
        f"part(s); {unsplittable} could not be cut at a line boundary"
    )
    return plan


# --------------------------------------------------------------------------- connect


def _connections(
    v: View, lonely: list[str], targets: list[str], k: int
) -> dict[tuple[str, str], float]:
    g = v.graph
    tv = _unit(v.vectors(targets))
    pos = {t: j for j, t in enumerate(targets)}
    k = min(k, len(targets))
    found: dict[tuple[str, str], float] = {}
    for start in range(0, len(lonely), _BLOCK):
        block = lonely[start : start + _BLOCK]
        sims = _unit(v.vectors(block)) @ tv.T
        for r, nid in enumerate(block):
            row = sims[r]
            if nid in pos:
                row[pos[nid]] = -np.inf
            top = np.argpartition(-row, k - 1)[:k].tolist()
            for j in sorted(top, key=lambda j: (-row[j], targets[j])):
                if row[j] <= 0:
                    continue
                other = targets[j]
                found[(other, nid)] = float(row[j])
                if g.nodes[nid].kind != "CORRECTION":
                    found[(nid, other)] = float(row[j])
    return found


def decide_connect(v: View) -> OpPlan:
    """Connect nodes without any edge to their most similar chunks (see the module rules)."""
    s, g = v.settings, v.graph
    params = (setting("connect_k", s.connect_k), setting("connect_weight", s.connect_weight))
    has_in = {t for targets in g.out.values() for t in targets}
    live = [i for i in sorted(g.nodes) if i not in g.merged and g.nodes[i].text]
    lonely = [i for i in live if not g.out.get(i) and i not in has_in]
    targets = [i for i in live if g.nodes[i].kind == CHUNK]
    plan = OpPlan("connect", params, "")
    found = _connections(v, lonely, targets, s.connect_k) if lonely and s.connect_k else {}
    specs = [
        EdgeSpec(source=a, target=b, weight=s.connect_weight, kind="connect")
        for (a, b) in sorted(found)
    ]
    if specs:
        events: list[Event] = [EdgesCreated(edges=tuple(specs), cause="connect")]
        plan.events = events
    plan.changes = [
        Change(
            "created",
            sp.source,
            sp.target,
            0.0,
            sp.weight,
            f"cosine {found[(sp.source, sp.target)]:.3f}",
        )
        for sp in sorted(
            specs, key=lambda sp: (-found[(sp.source, sp.target)], sp.source, sp.target)
        )
    ]
    alone = set(lonely)
    reached = len({n for pair in found for n in pair if n in alone})
    plan.counts = {"lonely": len(lonely), "connected": reached, "edges": len(specs)}
    plan.summary = (
        f"{len(lonely)} node(s) without edges; {reached} connected with {len(specs)} edge(s)"
    )
    return plan
