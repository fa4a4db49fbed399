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
* when the survivor is removed, its aliases are removed too and their files are
  marked stale (content hash ``""``), so the next sync re-reads them and indexes the
  text the aliases stood for as new chunks: nothing is lost and nothing duplicated.
"""

from __future__ import annotations

import sys

import msgspec

from ocb_events.schema import (
    STOP,
    AuthoritySet,
    ChunkSpan,
    ChunkText,
    EdgeRelevanceSet,
    EdgesCreated,
    EdgeSpec,
    EdgesRemoved,
    EdgesUpdated,
    FileChanged,
    FileIndexed,
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
from projections._lazy import LazyMap

CHUNK = "chunk"


class Node(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A node: a chunk of a workspace file, or an injected CORRECTION / TEACHING /
    DIRECTIVE. ``anchor`` is extra text indexed with it (a correction's query); ``also``
    the sources (``path#Lstart-Lend``) of the chunks merged into it, which it cites too."""

    id: str
    kind: str
    text: str
    path: str = ""
    start_line: int = 0
    end_line: int = 0
    heading: str = ""
    text_hash: str = ""
    authority: str = "overlay"
    anchor: str = ""
    created_seq: int = 0
    also: tuple[str, ...] = ()
    start_col: int = 0  # where a slice of a long line starts in it (see ChunkText)

    @property
    def source(self) -> str:
        """``path#Lstart-Lend`` for a chunk, ``inject:<id>`` for an injected node."""
        if not self.path:
            return f"inject:{self.id}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


class Edge(msgspec.Struct, array_like=True):
    """A directed edge's weight in [-1, 1], its kind, the seq that last set it, and its
    relevance in [-1, 1] (teacher-given, 0 by default). Mutable so that a fold updates
    weights in place; never shared between states."""

    weight: float
    kind: str
    last_seq: int
    relevance: float = 0.0


class RouteModel(msgspec.Struct, frozen=True, array_like=True):
    """The learned route model in force: its blob and the features it scores."""

    blob: str
    features: tuple[str, ...]
    seq: int


class FileEntry(msgspec.Struct, frozen=True, array_like=True):
    """A workspace file as indexed: content hash, chunk ids in file order, and the
    next free chunk ordinal (ids are ``path::n`` and never reused)."""

    content_hash: str
    chunks: tuple[str, ...]
    next_ordinal: int


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


_NODE = msgspec.msgpack.Decoder(Node)
_TARGETS = msgspec.msgpack.Decoder(dict[str, Edge])


class State:
    """The graph at ``seq``. Mutable; see the module note. ``nodes`` and ``out`` are
    lazy mappings: a restored value is decoded when first read.

    ``nodes_seq`` is the seq of the last event that changed what a search over nodes
    sees (a node's text, the node set, or node vectors); search caches key on it.
    ``baseline`` holds each node's running-average reward; ``file_authority`` the
    authority given to whole files (their future chunks inherit it); ``maintained``
    the ts of each maintenance operation's last run; ``merged`` maps each alias left
    by a merge to the node that absorbed it (see the module docstring); ``retracted``
    maps the seq of each retracted record to the seq of its retraction.
    """

    __slots__ = (
        "seq",
        "workspace",
        "nodes_seq",
        "nodes",
        "out",
        "stop",
        "files",
        "injected",
        "baseline",
        "file_authority",
        "maintained",
        "route_model",
        "merged",
        "retracted",
        "_inc",
        "_stale",
        "_dropped",
    )

    def __init__(self) -> None:
        self.seq = 0
        self.workspace = ""
        self.nodes_seq = 0
        self.nodes: LazyMap[Node] = LazyMap({}, _NODE)
        self.out: LazyMap[dict[str, Edge]] = LazyMap({}, _TARGETS)
        self.stop: dict[str, float] = {}
        self.files: dict[str, FileEntry] = {}
        self.injected: dict[str, int] = {}
        self.baseline: dict[str, float] = {}
        self.file_authority: dict[str, str] = {}
        self.maintained: dict[str, int] = {}
        self.route_model: RouteModel | None = None
        self.merged: dict[str, str] = {}
        self.retracted: dict[int, int] = {}
        self._inc: dict[str, set[str]] | None = None
        # within one record: files whose aliases were dropped, and those aliases
        self._stale: set[str] = set()
        self._dropped: set[str] = set()

    def edge_count(self) -> int:
        """The number of directed edges."""
        return sum(len(v) for v in self.out.values())

    def incoming(self, node_id: str) -> list[str]:
        """Sources of edges into ``node_id``, sorted."""
        return sorted(self._incoming().get(node_id, ()))

    def _incoming(self) -> dict[str, set[str]]:
        if self._inc is None:
            inc: dict[str, set[str]] = {}
            for src, targets in self.out.items():
                for dst in targets:
                    inc.setdefault(dst, set()).add(src)
            self._inc = inc
        return self._inc

    # ---------------------------------------------------------------- mutations

    def set_edge(self, spec: EdgeSpec, seq: int) -> None:
        if spec.source == spec.target:
            return
        if spec.source not in self.nodes or spec.target not in self.nodes:
            return
        if self.merged and (spec.source in self.merged or spec.target in self.merged):
            return
        self.out.setdefault(spec.source, {})[spec.target] = Edge(_clip(spec.weight), spec.kind, seq)
        if self._inc is not None:
            self._inc.setdefault(spec.target, set()).add(spec.source)

    def add_chunk(self, path: str, c: ChunkText, seq: int) -> None:
        also: tuple[str, ...] = ()
        if c.id in self.nodes:
            old = self.nodes[c.id]
            if c.id in self.merged:
                self._cite(self.merged.pop(c.id), old.source, None)
            also = old.also
        self.nodes[c.id] = Node(
            id=c.id,
            kind=CHUNK,
            text=c.text,
            path=path,
            start_line=c.start_line,
            end_line=c.end_line,
            heading=c.heading,
            text_hash=c.text_hash,
            authority=_authority(self.file_authority.get(path, "overlay")),
            created_seq=seq,
            also=also,
            start_col=c.start_col,
        )

    def remove_edge(self, source: str, target: str) -> None:
        targets = self.out.get(source)
        if targets is None or targets.pop(target, None) is None:
            return
        if not targets:
            del self.out[source]
        if self._inc is not None:
            self._inc.get(target, set()).discard(source)

    def remove_node(self, node_id: str) -> None:
        node = self.nodes.pop(node_id, None)
        if node is None:
            return
        inc = self._incoming()
        for dst in self.out.pop(node_id, {}):
            sources = inc.get(dst)
            if sources is not None:
                sources.discard(node_id)
        for src in inc.pop(node_id, set()):
            targets = self.out.get(src)
            if targets is not None:
                targets.pop(node_id, None)
                if not targets:
                    del self.out[src]
        self.stop.pop(node_id, None)
        self.baseline.pop(node_id, None)
        if self.merged:
            self._unmerge(node_id, node)

    # ---------------------------------------------------------------- aliases

    def _cite(self, kept: str, old: str, new: str | None) -> None:
        """Replace (or with ``new`` None, drop) the source ``old`` in ``kept``'s also."""
        node = self.nodes.get(kept)
        if node is None or old not in node.also:
            return
        also = tuple(new if a == old else a for a in node.also if new is not None or a != old)
        self.nodes[kept] = msgspec.structs.replace(node, also=also)

    def _unmerge(self, node_id: str, node: Node) -> None:
        kept = self.merged.pop(node_id, None)
        if kept is not None:
            self._cite(kept, node.source, None)
        for alias in sorted(a for a, k in self.merged.items() if k == node_id):
            del self.merged[alias]
            gone = self.nodes.get(alias)
            self.remove_node(alias)
            self._dropped.add(alias)
            entry = self.files.get(gone.path) if gone is not None else None
            if gone is not None and entry is not None:
                chunks = tuple(i for i in entry.chunks if i != alias)
                self.files[gone.path] = FileEntry("", chunks, entry.next_ordinal)
                self._stale.add(gone.path)

    def revise(self, c: ChunkText) -> None:
        """A chunk's new text and place; its id, edges and age stay."""
        node = self.nodes.get(c.id)
        if node is None:
            return
        self.nodes[c.id] = msgspec.structs.replace(
            node, text=c.text, text_hash=c.text_hash, heading=c.heading,
            start_line=c.start_line, end_line=c.end_line, start_col=c.start_col,
        )  # fmt: skip
        if c.id in self.merged:
            self._cite(self.merged[c.id], node.source, self.nodes[c.id].source)

    def move(self, node_id: str, start_line: int, end_line: int, start_col: int = 0) -> None:
        """Set a chunk's place (and its survivor's citation when it is an alias)."""
        node = self.nodes.get(node_id)
        if node is None:
            return
        moved = msgspec.structs.replace(
            node, start_line=start_line, end_line=end_line, start_col=start_col
        )
        self.nodes[node_id] = moved
        if node_id in self.merged:
            self._cite(self.merged[node_id], node.source, moved.source)

    def settle(self) -> None:
        """End of a record: files that lost aliases stay stale (re-read on next sync)."""
        for path in sorted(self._stale):
            entry = self.files.get(path)
            if entry is not None and entry.content_hash:
                self.files[path] = FileEntry("", entry.chunks, entry.next_ordinal)
        self._stale.clear()
        self._dropped.clear()


def _authority(value: str) -> str:
    return sys.intern(value)


def _clip(w: float) -> float:
    return -1.0 if w < -1.0 else 1.0 if w > 1.0 else w


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
    for c in ev.added:
        state.add_chunk(ev.path, c, seq)
    for c in ev.revised:
        state.revise(c)
    old = state.files.get(ev.path)
    nxt = max([old.next_ordinal if old else 0] + [_ordinal(c.id) + 1 for c in ev.added])
    spans = [s for s in ev.kept if s.id not in state._dropped]
    revised = [c for c in ev.revised if c.id in state.nodes]
    order: list[ChunkText | ChunkSpan] = sorted([*spans, *ev.added, *revised], key=_place)
    state.files[ev.path] = FileEntry(ev.content_hash, tuple(c.id for c in order), nxt)
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
                edge.relevance = _clip(value)


def _set_authority(state: State, ev: AuthoritySet) -> None:
    ids = list(ev.node_ids)
    if ev.path:
        state.file_authority[ev.path] = _authority(ev.authority)
        entry = state.files.get(ev.path)
        ids += list(entry.chunks) if entry is not None else []
    for node_id in ids:
        node = state.nodes.get(node_id)
        if node is not None:
            state.nodes[node_id] = msgspec.structs.replace(node, authority=_authority(ev.authority))


def _inject(state: State, ev: NodeInjected, seq: int) -> None:
    state.nodes[ev.node_id] = Node(
        id=ev.node_id,
        kind=ev.node_type,
        text=ev.content,
        authority=_authority(ev.authority),
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


def evolve(state: State, rec: Record | FoldRecord) -> State:
    """Apply one record (consumes ``state``)."""
    ev = rec.event
    match ev:
        case EdgesCreated() | EdgesUpdated() | EdgesRemoved() | EdgeRelevanceSet():
            _fold_edges(state, ev, rec.seq)
        case AuthoritySet():
            _set_authority(state, ev)
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
    state.nodes = LazyMap(snap.nodes, _NODE)
    state.out = LazyMap(snap.out, _TARGETS)
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
