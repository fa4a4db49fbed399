"""Injections: deciding a CORRECTION, TEACHING or DIRECTIVE node and its edges, and
recording one on a store."""

from __future__ import annotations

from collections.abc import Sequence
from hashlib import sha256

import msgspec
import numpy as np

from ocb.engine.embed import Embedder, pack_matrix
from ocb.engine.search import SearchIndex
from ocb.engine.stance import idf_of, judge
from ocb.graph.query import trace_of
from ocb.redaction import redact_input, redact_key
from ocb.reports import Cited, InjectReport
from ocb.settings import Indexing, actor_of
from ocb.store import Decision, Store
from ocb_events.errors import InputError, unknown
from ocb_events.schema import (
    EdgeSpec,
    Event,
    NodeInjected,
    NodesEmbedded,
    QueryTraced,
)
from projections.graph import CHUNK, Node, State

NODE_TYPES = ("CORRECTION", "TEACHING", "DIRECTIVE")


def _similar_nodes(
    index: SearchIndex, graph: State, qtext: str, qvec: np.ndarray, k: int
) -> list[str]:
    hyb, _, _ = index.hybrid(qtext, qvec, 0.6)
    order = sorted(range(len(index.ids)), key=lambda i: (-hyb[i], index.ids[i]))
    out: list[str] = []
    for i in order:
        if len(out) >= k or hyb[i] <= 0:
            break
        nid = index.ids[i]
        if nid in graph.nodes and graph.nodes[nid].kind == CHUNK:
            out.append(nid)
    return out


class Injection(msgspec.Struct):
    """An injection decided: the node's id, its record and the record of its vector
    with the vector's blob (``node`` None when the same node exists already), and for
    a CORRECTION how it chose what to veto (``targets``, ``all`` fired chunks, or by
    ``content``), the chunks it vetoes, and the fired chunks it left alone."""

    node_id: str
    node: NodeInjected | None = None
    embedded: NodesEmbedded | None = None
    blobs: list[bytes] = msgspec.field(default_factory=list)
    selection: str = ""
    vetoed: list[str] = msgspec.field(default_factory=list)
    spared: list[str] = msgspec.field(default_factory=list)

    @property
    def events(self) -> list[Event]:
        """The events to record, in order (none for a node that exists already)."""
        return [e for e in (self.node, self.embedded) if e is not None]


def _check_same_vetoes(
    graph: State,
    node_id: str,
    trace: QueryTraced | None,
    targets: Sequence[str],
    all_fired: bool,
) -> None:
    """An injection that repeats a node's content repeats it only when it asks for no
    veto the node lacks (``--all`` or named targets after a correction by content).

    Raises:
        InputError: naming the node to retract first.
    """
    wanted = set(targets)
    if all_fired and trace is not None:
        wanted |= {f for f in trace.fired if f in graph.nodes and graph.nodes[f].kind == CHUNK}
    held = {t for t, e in graph.out.get(node_id, {}).items() if e.weight < 0}
    if wanted - held:
        raise InputError(
            f"{node_id} already holds this content and vetoes {len(held)} chunk(s), "
            f"not the {len(wanted - held)} more asked for",
            f"take it back first: ocb retract --node {node_id}, then inject it again",
        )


def _check_inject(
    graph: State,
    kind: str,
    text: str,
    trace: QueryTraced | None,
    targets: Sequence[str],
    all_fired: bool,
) -> None:
    if kind not in NODE_TYPES:
        raise InputError(f"unknown node type {kind!r}", f"use one of: {', '.join(NODE_TYPES)}")
    if not text:
        raise InputError(
            "the content is empty", 'give the text, e.g. `content="Never skip CI"`', param="content"
        )
    if kind == "CORRECTION" and trace is None and not targets:
        raise InputError(
            "a CORRECTION must say what it corrects",
            "pass `chat_id`, `trace_id` or `targets`",
            param=("chat_id", "trace_id", "targets"),
        )
    if all_fired and (kind != "CORRECTION" or trace is None or targets):
        raise InputError(
            "`all_fired` vetoes every chunk that fired in a corrected trace",
            "use it with `node_type=CORRECTION` and `chat_id` or `trace_id`, without `targets`",
            param=("all_fired", "node_type", "chat_id", "trace_id", "targets"),
        )
    for t in targets:
        if t not in graph.nodes:
            raise unknown("node", t, sorted(graph.nodes), "list node ids from `ocb query --json`")


def _fired_chunks(graph: State, trace: QueryTraced) -> list[str]:
    """The chunks that fired in ``trace`` and are still in the graph."""
    return [f for f in trace.fired if f in graph.nodes and graph.nodes[f].kind == CHUNK]


def _by_content(
    graph: State,
    index: SearchIndex,
    text: str,
    trace: QueryTraced,
    near: Sequence[str],
    s: Indexing,
) -> tuple[list[str], list[str]]:
    """The chunks a correction vetoes by its content (see ``ocb.engine.stance``), among what
    fired and the correction's best matches (``near``); and the fired ones it spares."""
    fired = _fired_chunks(graph, trace)
    pool = list(dict.fromkeys([*fired, *near]))
    files = graph.files

    def file_of(path: str) -> list[Node]:
        entry = files.get(path)
        return [graph.nodes[c] for c in entry.chunks if c in graph.nodes] if entry else []

    stances = judge(
        text, [graph.nodes[n] for n in pool], file_of, idf_of(index), s.correction_min_similarity
    )
    vetoed = [st.node_id for st in stances if st.vetoed]
    vetoed_set = set(vetoed)
    return vetoed, [f for f in fired if f not in vetoed_set]


def _new_id(graph: State, kind: str) -> str:
    """The next id of an injected node of ``kind`` (a retracted one's is never reused)."""
    ordinal = graph.injected.get(kind, 0) + 1
    while f"{kind.lower()}::{ordinal}" in graph.nodes:
        ordinal += 1
    return f"{kind.lower()}::{ordinal}"


def _connections(
    node_id: str, kind: str, near: Sequence[str], suppressed: Sequence[str], s: Indexing
) -> list[EdgeSpec]:
    """Edges from the nearest chunks into the node (and back, unless a correction),
    and a correction's inhibitory edges to what it vetoes."""
    conns: list[EdgeSpec] = []
    for other in near:
        conns.append(
            EdgeSpec(source=other, target=node_id, weight=s.inject_weight, kind="injected")
        )
        if kind != "CORRECTION":
            conns.append(
                EdgeSpec(source=node_id, target=other, weight=s.inject_weight, kind="injected")
            )
    if kind == "CORRECTION":
        conns += [
            EdgeSpec(source=node_id, target=t, weight=s.correction_weight, kind="inhibit")
            for t in sorted(set(suppressed))
        ]
    return conns


def _vetoes(
    graph: State,
    index: SearchIndex,
    kind: str,
    text: str,
    trace: QueryTraced | None,
    targets: Sequence[str],
    all_fired: bool,
    pool: Sequence[str],
    s: Indexing,
) -> tuple[str, list[str], list[str]]:
    """How a correction chooses what to veto, the chunks it vetoes and the fired ones
    it spares (nothing for a TEACHING or DIRECTIVE)."""
    if kind != "CORRECTION":
        return "", list(targets), []
    if trace is None or targets:
        return "targets", list(targets), []
    if all_fired:
        return "all", _fired_chunks(graph, trace), []
    suppressed, spared = _by_content(graph, index, text, trace, pool, s)
    return "content", suppressed, spared


def decide_inject(
    graph: State,
    index: SearchIndex,
    embedder: Embedder,
    node_type: str,
    content: str,
    s: Indexing,
    *,
    trace: QueryTraced | None = None,
    chat_id: str = "",
    targets: Sequence[str] = (),
    all_fired: bool = False,
) -> Injection:
    """A new CORRECTION / TEACHING / DIRECTIVE node, connected both ways to its most
    similar chunks; a correction instead gets edges from them and inhibitory edges to
    what it corrects: ``targets``; with ``all_fired`` every chunk that fired in
    ``trace``; otherwise the chunks of that trace (and among the correction's best
    matches) that its content contradicts (``ocb.engine.stance``).

    Raises:
        InputError: unknown type, empty content, unknown target ids, a CORRECTION that
            names nothing to correct, ``all_fired`` without a trace.
    """
    kind = node_type.upper()
    text = content.strip()
    _check_inject(graph, kind, text, trace, targets, all_fired)
    anchor = trace.query if trace is not None else ""
    for n in graph.nodes.values():
        if n.kind == kind and n.text == text and n.anchor == anchor:
            _check_same_vetoes(graph, n.id, trace, targets, all_fired)
            return Injection(n.id)
    node_id = _new_id(graph, kind)
    qtext = "\n".join(p for p in (text, anchor) if p)
    qvec = embedder.embed([qtext])
    pool_k = trace.params.max_fired if kind == "CORRECTION" and trace is not None else 0
    similar = _similar_nodes(index, graph, qtext, qvec[0], max(s.connect_k, pool_k))
    selection, suppressed, spared = _vetoes(
        graph, index, kind, text, trace, targets, all_fired, similar[:pool_k], s
    )
    near = [n for n in similar[: s.connect_k] if n not in suppressed]
    conns = _connections(node_id, kind, near, suppressed, s)
    blob = pack_matrix(qvec)
    node = NodeInjected(
        node_id=node_id,
        node_type=kind,  # type: ignore[arg-type]
        content=text,
        connections=tuple(conns),
        anchor_query=anchor,
        chat_id=chat_id,
        trace_id=trace.trace_id if trace is not None else "",
    )
    embedded = NodesEmbedded(
        embedder_id=embedder.id, blob=sha256(blob).hexdigest(), node_ids=(node_id,)
    )
    vetoes = list(dict.fromkeys(suppressed))
    return Injection(node_id, node, embedded, [blob], selection, vetoes, spared)


# --------------------------------------------------------------------------- on a store


def inject(
    store: Store,
    node_type: str,
    content: str,
    *,
    chat_id: str = "",
    trace_id: str = "",
    targets: Sequence[str] = (),
    all_fired: bool = False,
    actor: str = "cli",
) -> InjectReport:
    """Add a CORRECTION, TEACHING or DIRECTIVE node and record it as ``actor`` (see
    ``Brain.inject``).

    Raises:
        InputError: bad type, empty content, unknown chat, trace or target ids, a
            CORRECTION naming nothing to correct.
    """
    store.load("config", "graph", "traces")
    secrets = store.secrets()
    chat_id = redact_key(store.warn, secrets, "chat id", chat_id)
    trace = trace_of(store, trace_id, chat_id) if (trace_id or chat_id) else None
    ix = store.setting(Indexing)
    content = redact_input(store.warn, secrets, "injected content", content)
    if trace is not None:  # a trace recorded before scanning was on
        anchor = redact_input(store.warn, secrets, "anchor query", trace.query)
        trace = msgspec.structs.replace(trace, query=anchor)
    decided: list[tuple[Injection, list[Cited], list[Cited]]] = []

    def decide(_seq: int) -> Decision:
        got = decide_inject(
            store.graph,
            store.search_index(),
            store.embedder(),
            node_type,
            content,
            ix,
            trace=trace,
            chat_id=chat_id,
            targets=targets,
            all_fired=all_fired,
        )
        g = store.graph
        vetoed = [Cited(n, g.nodes[n].source) for n in got.vetoed]
        spared = [Cited(n, g.nodes[n].source) for n in got.spared]
        decided.append((got, vetoed, spared))
        return Decision(got.events if got.node is not None else [], got.blobs)

    store.transact(actor_of(actor), decide)
    got, vetoed, spared = decided[-1]
    if got.node is None:
        return InjectReport(got.node_id, False, 0, [])
    store.search_index()
    conns = got.node.connections
    inhibits = sorted(c.target for c in conns if c.weight < 0)
    return InjectReport(got.node_id, True, len(conns), inhibits, got.selection, vetoed, spared)
