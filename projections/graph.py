"""The graph projection: chunk and injected nodes, directed signed edges, stop weights,
per-node reward baselines, authority, the route model in force, the aliases left
by maintenance merges, and which records were retracted.

NOTE: ``State`` is mutable for speed: ``evolve`` consumes its input and returns it.
Copy a state through ``restore(snapshot(state))``. Nothing here may depend on the
insertion order of a dict: a restored state orders its keys differently from a folded
one, so every ordered output sorts explicitly.

NOTE: msgspec omits a default field only when the value *is* the default object, so
strings compared with a default (authority) are interned before they are stored;
otherwise a folded state and a restored one would encode differently.

Merged chunks (``NodesMerged``): the absorbed chunk stays as an *alias*, a node with
no text and no edges that keeps its id, path, lines and text hash, so that
``ocb.graph.sync.previous_files`` and the workspace differ still recognise it. Its
survivor lists the alias's source in ``Node.also``. Folding keeps them in step:

* a re-sync that moves the alias's lines updates the survivor's ``also``;
* a re-sync that changes or removes the alias's text removes the alias (and the
  citation); the new text, if any, is indexed as a new chunk by that same sync;
* no edge is ever set on an alias;
* when the survivor is removed, or revised to another text, its aliases are removed
  too and their files are marked stale (content hash ``""``), so the next sync re-reads
  them and indexes the text the aliases stood for as new chunks: nothing is lost and
  nothing duplicated.

Chunk ids outlive edits and moves: a chunk ``revised`` by a ``FileChanged`` keeps its
node (edges, weights, baseline, authority, creation seq) with its new text, heading and
place; a ``FileMoved`` moves a file's entry to its new path and sets the path of each
of its chunks (ids stay ``old_path::n``; nothing reads a path from an id), the file's
authority going with it.
"""

from __future__ import annotations

import msgspec

from ocb_events.schema import (
    STOP,
    AuthoritySet,
    ChunkSpan,
    ChunkText,
    EdgeRelevanceSet,
    EdgesCreated,
    EdgesRemoved,
    EdgesUpdated,
    Event,
    FileChanged,
    FileIndexed,
    FileMoved,
    FileRemoved,
    FoldRecord,
    MaintenanceRan,
    NodeInjected,
    NodesEmbedded,
    NodesMerged,
    NodeSplit,
    Record,
    Retracted,
    RouteModelTrained,
    WorkspaceAttached,
)
from projections._graph_state import (
    CHUNK as CHUNK,
    NODE_DECODER,
    TARGETS_DECODER,
    Edge as Edge,
    FileEntry as FileEntry,
    Node as Node,
    RouteModel as RouteModel,
    State as State,
    clip,
    interned,
)
from projections._lazy import LazyMap


class _Snapshot(msgspec.Struct, array_like=True):
    seq: int
    workspace: str
    nodes_seq: int
    nodes: dict[str, msgspec.Raw]
    out: dict[str, msgspec.Raw]
    stop: dict[str, float]
    files: dict[str, FileEntry]
    injected: dict[str, int]
    baseline: dict[str, float]
    file_authority: dict[str, str]
    maintained: dict[str, int]
    route_model: RouteModel | None
    merged: dict[str, str] = {}
    retracted: tuple[tuple[int, int], ...] = ()


def _ordinal(node_id: str) -> int:
    tail = node_id.rsplit("::", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _place(c: ChunkText | ChunkSpan) -> tuple[int, int, str]:
    """File order: line, then column (slices of one long line), then id."""
    return (c.start_line, c.start_col, c.id)


def _index_file(state: State, ev: FileIndexed, seq: int) -> None:
    old = state.files.get(ev.path)
    keep = {c.id for c in ev.chunks}
    if old is not None:
        for node_id in old.chunks:
            if node_id not in keep:
                state.remove_node(node_id)
    for c in ev.chunks:
        state.add_chunk(ev.path, c, seq)
    nxt = max([old.next_ordinal if old else 0] + [_ordinal(c.id) + 1 for c in ev.chunks])
    ids = tuple(c.id for c in sorted(ev.chunks, key=_place))
    state.files[ev.path] = FileEntry(ev.content_hash, ids, nxt)
    state.nodes_seq = seq


def _change_file(state: State, ev: FileChanged, seq: int) -> None:
    for node_id in ev.removed:
        state.remove_node(node_id)
    for span in ev.kept:
        state.move(span.id, span.start_line, span.end_line, span.start_col)
    for c in ev.revised:
        state.revise(ev.path, c, seq)
    for c in ev.added:
        state.add_chunk(ev.path, c, seq)
    old = state.files.get(ev.path)
    nxt = max([old.next_ordinal if old else 0] + [_ordinal(c.id) + 1 for c in ev.added])
    spans = [s for s in ev.kept if s.id not in state._dropped]
    order: list[ChunkText | ChunkSpan] = sorted([*spans, *ev.revised, *ev.added], key=_place)
    state.files[ev.path] = FileEntry(ev.content_hash, tuple(c.id for c in order), nxt)
    state.nodes_seq = seq


def _move_file(state: State, ev: FileMoved, seq: int) -> None:
    """The file at ``old_path`` is now at ``path`` (what was at ``path`` is replaced)."""
    entry = state.files.get(ev.old_path)
    if entry is None or ev.old_path == ev.path:
        return
    replaced = state.files.pop(ev.path, None)
    del state.files[ev.old_path]
    nxt = max(entry.next_ordinal, replaced.next_ordinal if replaced is not None else 0)
    content_hash = ev.content_hash if entry.content_hash else ""  # a stale file stays stale
    state.files[ev.path] = FileEntry(content_hash, entry.chunks, nxt)
    for node_id in entry.chunks:
        state.rename(node_id, ev.path)
    moved = set(entry.chunks)
    for node_id in replaced.chunks if replaced is not None else ():
        if node_id not in moved:
            state.remove_node(node_id)
    authority = state.file_authority.get(ev.old_path)
    if authority is not None:
        state.file_authority.setdefault(ev.path, authority)
    state.nodes_seq = seq


def _update_edges(state: State, ev: EdgesUpdated, seq: int) -> None:
    # hot in replay: plain dict access, one lookup per source, weights updated in place
    out, raw_out = state.out, state.out.raw_items()
    stop, nodes = state.stop, state.nodes.raw_items()
    for u in ev.updates:
        src = u.source
        targets = raw_out.get(src)
        if targets is not None and type(targets) is not dict:
            targets = out[src]
        for target, delta in zip(u.targets, u.deltas, strict=False):
            if target == STOP:
                if src in nodes:
                    w = stop.get(src, 0.0) + delta
                    stop[src] = -1.0 if w < -1.0 else 1.0 if w > 1.0 else w
            elif targets is not None:
                edge = targets.get(target)
                if edge is not None:
                    w = edge.weight + delta
                    edge.weight = -1.0 if w < -1.0 else 1.0 if w > 1.0 else w
                    edge.last_seq = seq
    for b in ev.baselines:
        if b.node in nodes:
            state.baseline[b.node] = b.value


def _set_relevance(state: State, ev: EdgeRelevanceSet) -> None:
    for u in ev.updates:
        targets = state.out.get(u.source)
        if targets is None:
            continue
        for target, value in zip(u.targets, u.values, strict=False):
            edge = targets.get(target)
            if edge is not None:
                edge.relevance = clip(value)


def _setinterned(state: State, ev: AuthoritySet) -> None:
    ids = list(ev.node_ids)
    if ev.path:
        state.file_authority[ev.path] = interned(ev.authority)
        entry = state.files.get(ev.path)
        ids += list(entry.chunks) if entry is not None else []
    for node_id in ids:
        node = state.nodes.get(node_id)
        if node is not None:
            state.nodes[node_id] = msgspec.structs.replace(node, authority=interned(ev.authority))


def _inject(state: State, ev: NodeInjected, seq: int) -> None:
    state.nodes[ev.node_id] = Node(
        id=ev.node_id,
        kind=ev.node_type,
        text=ev.content,
        authority=interned(ev.authority),
        anchor=ev.anchor_query,
        created_seq=seq,
    )
    state.injected[ev.node_type] = state.injected.get(ev.node_type, 0) + 1
    for spec in ev.connections:
        state.set_edge(spec, seq)
    state.nodes_seq = seq


def _retract(state: State, ev: Retracted, seq: int) -> None:
    """Note the retraction; a retracted injection's node goes, with every edge into
    or out of it (learned ones too: they exist only because it was injected). Its
    ordinal stays counted in ``injected``, so a new injection never reuses its id."""
    state.retracted[ev.target_seq] = seq
    node = state.nodes.get(ev.node_id) if ev.kind == "injection" else None
    if node is not None and node.kind != CHUNK:
        state.remove_node(ev.node_id)
        state.nodes_seq = seq


def _merge(state: State, ev: NodesMerged, seq: int) -> None:
    kept, gone = state.nodes.get(ev.kept), state.nodes.get(ev.absorbed)
    if kept is None or gone is None or ev.kept == ev.absorbed:
        return
    if ev.kept in state.merged or ev.absorbed in state.merged:
        return
    if ev.absorbed in state.merged.values():  # it has aliases of its own: not merged
        return
    for spec in ev.edges:
        state.set_edge(spec, seq)
    for dst in list(state.out.get(ev.absorbed, {})):
        state.remove_edge(ev.absorbed, dst)
    for src in state.incoming(ev.absorbed):
        state.remove_edge(src, ev.absorbed)
    state.stop.pop(ev.absorbed, None)
    state.baseline.pop(ev.absorbed, None)
    state.nodes[ev.absorbed] = msgspec.structs.replace(gone, text="", heading="", also=())
    state.merged[ev.absorbed] = ev.kept
    kept = state.nodes[ev.kept]
    state.nodes[ev.kept] = msgspec.structs.replace(kept, also=(*kept.also, gone.source))
    state.nodes_seq = seq


def _split(state: State, ev: NodeSplit, seq: int) -> None:
    old = state.nodes.get(ev.node_id)
    if old is None or old.kind != CHUNK or not old.path or ev.node_id in state.merged:
        return
    stop, base = state.stop.get(ev.node_id), state.baseline.get(ev.node_id)
    state.remove_node(ev.node_id)
    ids: list[str] = []
    for c in sorted(ev.parts, key=_place):
        state.add_chunk(old.path, c, seq)
        state.nodes[c.id] = msgspec.structs.replace(state.nodes[c.id], authority=old.authority)
        ids.append(c.id)
        if stop is not None:
            state.stop[c.id] = stop
        if base is not None:
            state.baseline[c.id] = base
    for spec in ev.edges:
        state.set_edge(spec, seq)
    entry = state.files.get(old.path)
    if entry is not None:
        order = [p for i in entry.chunks for p in (ids if i == ev.node_id else [i])]
        if ev.node_id not in entry.chunks:
            order += ids
        nxt = max([entry.next_ordinal] + [_ordinal(i) + 1 for i in ids])
        chunks = tuple(dict.fromkeys(i for i in order if i in state.nodes))
        state.files[old.path] = FileEntry(entry.content_hash, chunks, nxt)
    state.nodes_seq = seq


def initial() -> State:
    """An empty graph."""
    return State()


def _fold_nodes(state: State, ev: object, seq: int) -> None:
    match ev:
        case FileIndexed():
            _index_file(state, ev, seq)
        case FileChanged():
            _change_file(state, ev, seq)
        case FileMoved():
            _move_file(state, ev, seq)
        case FileRemoved(path=path, removed=removed):
            for node_id in removed:
                state.remove_node(node_id)
            state.files.pop(path, None)
            state.nodes_seq = seq
        case NodeInjected():
            _inject(state, ev, seq)
        case NodesEmbedded():
            state.nodes_seq = seq
        case WorkspaceAttached(root=root):
            state.workspace = root
        case NodesMerged():
            _merge(state, ev, seq)
        case NodeSplit():
            _split(state, ev, seq)
        case Retracted():
            _retract(state, ev, seq)


def _fold_edges(state: State, ev: object, seq: int) -> None:
    match ev:
        case EdgesCreated(edges=edges):
            for spec in edges:
                state.set_edge(spec, seq)
        case EdgesUpdated():
            _update_edges(state, ev, seq)
        case EdgesRemoved(edges=edges):
            for ref in edges:
                state.remove_edge(ref.source, ref.target)
        case EdgeRelevanceSet():
            _set_relevance(state, ev)


FOLDS: tuple[type[Event], ...] = (
    EdgesCreated,
    EdgesUpdated,
    EdgesRemoved,
    EdgeRelevanceSet,
    AuthoritySet,
    MaintenanceRan,
    RouteModelTrained,
    # the nodes (``_fold_nodes``)
    FileIndexed,
    FileChanged,
    FileMoved,
    FileRemoved,
    NodeInjected,
    NodesEmbedded,
    WorkspaceAttached,
    NodesMerged,
    NodeSplit,
    Retracted,
)
"""The events ``evolve`` folds; every other record only moves ``seq``."""


def evolve(state: State, rec: Record | FoldRecord) -> State:
    """Apply one record (consumes ``state``)."""
    ev = rec.event
    match ev:
        case EdgesCreated() | EdgesUpdated() | EdgesRemoved() | EdgeRelevanceSet():
            _fold_edges(state, ev, rec.seq)
        case AuthoritySet():
            _setinterned(state, ev)
        case MaintenanceRan(op=op):
            state.maintained[op] = rec.ts
        case RouteModelTrained(blob=blob, features=features):
            state.route_model = RouteModel(blob, features, rec.seq)
        case _:
            _fold_nodes(state, ev, rec.seq)  # files, injections, vectors; ignores the rest
    if state._stale or state._dropped:
        state.settle()
    state.seq = rec.seq
    return state


_ENCODER = msgspec.msgpack.Encoder(order="deterministic")
_DECODER = msgspec.msgpack.Decoder(_Snapshot)


def snapshot(state: State) -> bytes:
    """Canonical bytes of the state: equal states give equal bytes."""
    snap = _Snapshot(
        seq=state.seq,
        workspace=state.workspace,
        nodes_seq=state.nodes_seq,
        nodes=state.nodes.raw_items(),
        out={k: v for k, v in state.out.raw_items().items() if v},
        stop={k: v for k, v in state.stop.items() if v != 0.0},
        files=state.files,
        injected=state.injected,
        baseline=state.baseline,
        file_authority=state.file_authority,
        maintained=state.maintained,
        route_model=state.route_model,
        merged=state.merged,
        retracted=tuple(sorted(state.retracted.items())),
    )
    return _ENCODER.encode(snap)


def restore(data: bytes) -> State:
    """The state whose snapshot is ``data``."""
    snap = _DECODER.decode(data)
    state = State()
    state.seq = snap.seq
    state.workspace = snap.workspace
    state.nodes_seq = snap.nodes_seq
    state.nodes = LazyMap(snap.nodes, NODE_DECODER)
    state.out = LazyMap(snap.out, TARGETS_DECODER)
    state.stop = snap.stop
    state.files = snap.files
    state.injected = snap.injected
    state.baseline = snap.baseline
    state.file_authority = snap.file_authority
    state.maintained = snap.maintained
    state.route_model = snap.route_model
    state.merged = snap.merged
    state.retracted = dict(snap.retracted)
    return state
