"""The graph projection's state: nodes, edges, file entries and the ``State`` whose
methods the folds of ``projections.graph`` use (see its module docstring for the rules
of aliases left by merges).

NOTE: ``State`` is mutable for speed: folding consumes it (see ``projections.graph``).
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec

from ocb_events.schema import ChunkText, EdgeSpec
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
    next free chunk ordinal (ids are ``path::n`` when created and never reused; a
    moved file's chunks keep the ids of their old path)."""

    content_hash: str
    chunks: tuple[str, ...]
    next_ordinal: int


NODE_DECODER = msgspec.msgpack.Decoder(Node)
TARGETS_DECODER = msgspec.msgpack.Decoder(dict[str, Edge])


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
        self.nodes: LazyMap[Node] = LazyMap({}, NODE_DECODER)
        self.out: LazyMap[dict[str, Edge]] = LazyMap({}, TARGETS_DECODER)
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
        self.out.setdefault(spec.source, {})[spec.target] = Edge(clip(spec.weight), spec.kind, seq)
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
            authority=interned(self.file_authority.get(path, "overlay")),
            created_seq=seq,
            also=also,
            **_placed(path, c),
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
        self._release(node_id)

    def _release(self, node_id: str) -> None:
        """Remove the aliases merged into ``node_id`` and mark their files stale."""
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

    def move(self, node_id: str, start_line: int, end_line: int, start_col: int = 0) -> None:
        """Set a chunk's place (and its survivor's citation when it is an alias)."""
        node = self.nodes.get(node_id)
        if node is None:
            return
        self._resite(
            node,
            msgspec.structs.replace(
                node, start_line=start_line, end_line=end_line, start_col=start_col
            ),
        )

    def rename(self, node_id: str, path: str) -> None:
        """Set the file of a chunk whose file moved (its id stays)."""
        node = self.nodes.get(node_id)
        if node is not None and node.kind == CHUNK:
            self._resite(node, msgspec.structs.replace(node, path=path))

    def _resite(self, node: Node, moved: Node) -> None:
        self.nodes[node.id] = moved
        if node.id in self.merged:
            self._cite(self.merged[node.id], node.source, moved.source)

    def revise(self, path: str, c: ChunkText, seq: int) -> None:
        """A chunk's new text, heading and place under its id, which keeps its edges,
        weights, authority and creation seq. A revised alias is a chunk of its own again
        (its survivor stops citing it); a survivor revised to another text lets its
        aliases go as a removed one does; an unknown id is added as a new chunk."""
        old = self.nodes.get(c.id)
        if old is None or old.kind != CHUNK:
            self.add_chunk(path, c, seq)
            return
        if c.id in self.merged:
            self._cite(self.merged.pop(c.id), old.source, None)
        also = old.also
        if old.text_hash != c.text_hash and self.merged:  # its aliases stood for the old text
            self._release(c.id)
            also = ()
        self.nodes[c.id] = msgspec.structs.replace(old, also=also, **_placed(path, c))

    def settle(self) -> None:
        """End of a record: files that lost aliases stay stale (re-read on next sync)."""
        for path in sorted(self._stale):
            entry = self.files.get(path)
            if entry is not None and entry.content_hash:
                self.files[path] = FileEntry("", entry.chunks, entry.next_ordinal)
        self._stale.clear()
        self._dropped.clear()


def _placed(path: str, c: ChunkText) -> dict[str, Any]:
    """The fields of a chunk's node that its text and place give (added or revised)."""
    return {
        "text": c.text,
        "text_hash": c.text_hash,
        "heading": c.heading,
        "path": path,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "start_col": c.start_col,
    }


def interned(value: str) -> str:
    """``value`` interned (see the NOTE of ``projections.graph`` on authority)."""
    return sys.intern(value)


def clip(w: float) -> float:
    """``w`` clipped to [-1, 1]."""
    return -1.0 if w < -1.0 else 1.0 if w > 1.0 else w
