"""Deciding queries, outcomes and injections: state + command -> events.

Each ``decide_*`` reads projections (and may call the embedder) but never mutates
them; recording and folding happen in the API.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from hashlib import sha256

import msgspec
import numpy as np

from ocb.embed import Embedder
from ocb.indexing import pack_matrix
from ocb.learning import decide_deltas, group_by_source
from ocb.names import unknown as unknown  # re-exported: callers import it from here
from ocb.search import SearchIndex
from ocb.settings import REWARD_SOURCES, Indexing, Learning, Traversal
from ocb.stance import idf_of, judge
from ocb.traverse import SEPARATOR, Scorer, block_chars, context_block, tier_of, traverse
from ocb_events.errors import InputError
from ocb_events.schema import (
    Candidate,
    EdgeSpec,
    EdgesUpdated,
    Event,
    NodeInjected,
    NodesEmbedded,
    OutcomeRecorded,
    QueryParams,
    QueryTraced,
    SeedHit,
    Step,
)
from projections.graph import CHUNK, Node, State

NODE_TYPES = ("CORRECTION", "TEACHING", "DIRECTIVE")


# --------------------------------------------------------------------------- query


class Hit(msgspec.Struct, frozen=True):
    """One retrieval result."""

    id: str
    source: str
    text: str
    score: float
    fired: bool
    kind: str
    also: tuple[str, ...] = ()


def _params(s: Traversal, embedder_id: str) -> QueryParams:
    return QueryParams(
        mode=s.mode,
        max_hops=s.max_hops,
        max_fired=s.max_fired,
        max_context_chars=s.max_context_chars,
        max_seeds=s.max_seeds,
        tau=s.tau,
        damping=s.damping,
        reflex=s.reflex,
        habitual=s.habitual,
        inhibitory=s.inhibitory,
        alpha=s.alpha,
        fire_threshold=s.fire_threshold,
        branch=s.branch,
        embedder_id=embedder_id,
        visit_penalty=s.visit_penalty,
    )


def decide_query(
    graph: State,
    index: SearchIndex,
    embedder: Embedder,
    text: str,
    s: Traversal,
    *,
    top: int,
    trace_id: str,
    chat_id: str = "",
    scorer: Scorer | None = None,
) -> tuple[QueryTraced, list[Hit]]:
    """Seed, traverse and rank: the trace to record and the results to return.

    Raises:
        InputError: the query is empty or ``top`` is not positive.
    """
    query = text.strip()
    if not query:
        raise InputError(
            "the query is empty", 'ask a question, e.g. ocb query "how do I roll back"'
        )
    if top < 1:
        raise InputError(f"--top must be at least 1, got {top}", "pass --top 5")
    qvec = embedder.embed([query])[0]
    hyb, lex, cos = index.hybrid(query, qvec, s.lexical_weight)
    want = min(len(index.ids), s.max_seeds + top + 8)
    if want:
        part = np.argpartition(-hyb, want - 1)[:want]
        ranked = sorted((int(i) for i in part if hyb[i] > 0), key=lambda i: (-hyb[i], index.ids[i]))
    else:
        ranked = []
    best = float(hyb[ranked[0]]) if ranked else 0.0
    chosen = [i for i in ranked[: s.max_seeds] if hyb[i] >= s.seed_ratio * best]
    seeds = [(index.ids[i], float(hyb[i]) / best) for i in chosen]
    pos = index.pos
    walk = traverse(
        graph, seeds, s, lambda v: float(cos[pos[v]]) if v in pos else 0.0, scorer=scorer
    )
    hits = [_hit(graph, n, walk.activation[n], True) for n in walk.ranked()]
    # the next-best matches fill the results only as far as the context budget would
    # hold them too, so the results never carry more text than a context may
    room = s.max_context_chars - walk.context_len
    for i in ranked:
        if len(hits) >= top:
            break
        nid = index.ids[i]
        if nid not in walk.activation and nid not in walk.vetoed and nid in graph.nodes:
            cost = block_chars(graph.nodes[nid]) + len(SEPARATOR)
            if cost <= room:
                room -= cost
                hits.append(_hit(graph, nid, float(hyb[i]) / best, False))
    trace = QueryTraced(
        trace_id=trace_id,
        query=query,
        chat_id=chat_id,
        seeds=tuple(
            SeedHit(
                node_id=index.ids[i],
                score=float(hyb[i]),
                lexical=float(lex[i]),
                vector=float(cos[i]),
            )
            for i in chosen
        ),
        steps=tuple(walk.steps),
        fired=tuple(walk.fired),
        vetoed=tuple(sorted(walk.vetoed)),
        stop_reason=walk.stop_reason,
        context_chars=walk.context_chars,
        params=_params(s, embedder.id),
    )
    return trace, hits[:top]


def assemble_context(graph: State, fired: Sequence[str], hits: Sequence[Hit]) -> str:
    """Every fired node's text under its source, in the order of the results (the
    fired nodes beyond ``top`` last, by firing order). The traversal fired only what
    fits, so this is never longer than ``traversal.max_context_chars``."""
    shown = [h.id for h in hits if h.fired]
    seen = set(shown)
    rest = [n for n in fired if n not in seen]
    return SEPARATOR.join(context_block(graph.nodes[n]) for n in shown + rest)


def _hit(graph: State, node_id: str, score: float, fired: bool) -> Hit:
    n = graph.nodes[node_id]
    return Hit(
        id=n.id,
        source=n.source,
        text=n.text,
        score=round(score, 6),
        fired=fired,
        kind=n.kind,
        also=n.also,
    )


# --------------------------------------------------------------------------- learn


def check_outcome(outcome: float) -> float:
    """The outcome as a float in [-1, 1].

    Raises:
        InputError: NaN, infinite or out of range.
    """
    if (
        not isinstance(outcome, (int, float))
        or not math.isfinite(outcome)
        or not -1 <= outcome <= 1
    ):
        raise InputError(
            f"outcome must be a number in [-1, 1], got {outcome}",
            "use --outcome 1 for a good answer, -1 for a bad one",
        )
    return float(outcome)


def steps_from_ids(graph: State, ids: Sequence[str], s: Traversal) -> list[Step]:
    """A trajectory through explicitly listed nodes: one step per consecutive pair
    joined by an edge, with the node's current edges as candidates.

    Raises:
        InputError: an id names no node.
    """
    for nid in ids:
        if nid not in graph.nodes:
            raise unknown("node", nid, sorted(graph.nodes), "list node ids from `ocb query --json`")
    steps: list[Step] = []
    for hop, (a, b) in enumerate(zip(ids, ids[1:], strict=False), 1):
        out = graph.out.get(a, {})
        if b not in out:
            continue
        cands = [
            Candidate(target=v, weight=e.weight, logit=e.weight, tier=tier_of(e.weight, s))
            for v, e in sorted(out.items())
            if v == b or (e.weight > s.inhibitory and tier_of(e.weight, s) != "dormant")
        ]
        steps.append(
            Step(
                hop=hop,
                node=a,
                candidates=tuple(cands),
                stop_logit=graph.stop.get(a, 0.0),
                chosen=b,
            )
        )
    return steps


def decide_learn(
    steps: Sequence[Step],
    reward: float,
    s: Learning,
    *,
    source: str,
    damping: float,
    tau: float,
    outcome_seq: int,
    baselines: Mapping[str, float] | None = None,
    trace_id: str = "",
    chat_id: str = "",
    fired_ids: Sequence[str] = (),
    request_id: str = "",
) -> list[Event]:
    """The outcome and the weight changes it causes (cause_seq = the outcome's seq),
    with the new reward baselines of the nodes it passed through.

    Raises:
        InputError: a bad outcome or reward source.
    """
    reward = check_outcome(reward)
    if source not in REWARD_SOURCES:
        raise InputError(
            f"unknown reward source {source!r}", f"use one of: {', '.join(REWARD_SOURCES)}"
        )
    events: list[Event] = [
        OutcomeRecorded(
            reward=reward,
            source=source,  # type: ignore[arg-type]
            trace_id=trace_id,
            chat_id=chat_id,
            fired_ids=tuple(fired_ids),
            request_id=request_id,
        )
    ]
    d = decide_deltas(
        steps, reward, s, source=source, damping=damping, tau=tau, baselines=baselines
    )
    if d.deltas or d.baselines:
        events.append(
            EdgesUpdated(
                updates=group_by_source(d.deltas),
                rule=s.rule,
                cause_seq=outcome_seq,
                params=d.params,
                baselines=d.baselines,
            )
        )
    return events


# --------------------------------------------------------------------------- inject


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
    """An injection decided: its events and blobs (none when the same node exists
    already), the node's id, and for a CORRECTION how it chose what to veto
    (``targets``, ``all`` fired chunks, or by ``content``), the chunks it vetoes, and
    the fired chunks it left alone."""

    events: list[Event]
    blobs: list[bytes]
    node_id: str
    selection: str = ""
    vetoed: list[str] = msgspec.field(default_factory=list)
    spared: list[str] = msgspec.field(default_factory=list)


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
        raise InputError("the content is empty", 'give the text, e.g. --content "Never skip CI"')
    if kind == "CORRECTION" and trace is None and not targets:
        raise InputError(
            "a CORRECTION must say what it corrects",
            "pass --chat-id, --trace or --target",
        )
    if all_fired and (kind != "CORRECTION" or trace is None or targets):
        raise InputError(
            "--all vetoes every chunk that fired in a corrected trace",
            "use it with --type CORRECTION and --chat-id or --trace, without --target",
        )
    for t in targets:
        if t not in graph.nodes:
            raise unknown("node", t, sorted(graph.nodes), "list node ids from `ocb query --json`")


def _by_content(
    graph: State,
    index: SearchIndex,
    text: str,
    trace: QueryTraced,
    near: Sequence[str],
    s: Indexing,
) -> tuple[list[str], list[str]]:
    """The chunks a correction vetoes by its content (see ``ocb.stance``), among what
    fired and the correction's best matches (``near``); and the fired ones it spares."""
    fired = [f for f in trace.fired if f in graph.nodes and graph.nodes[f].kind == CHUNK]
    pool = list(dict.fromkeys([*fired, *near]))
    files = graph.files

    def file_of(path: str) -> list[Node]:
        entry = files.get(path)
        return [graph.nodes[c] for c in entry.chunks if c in graph.nodes] if entry else []

    stances = judge(
        text, [graph.nodes[n] for n in pool], file_of, idf_of(index), s.correction_min_similarity
    )
    vetoed = [st.node_id for st in stances if st.vetoed]
    return vetoed, [f for f in fired if f not in set(vetoed)]


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
    matches) that its content contradicts (``ocb.stance``).

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
            return Injection([], [], n.id)
    ordinal = graph.injected.get(kind, 0) + 1
    while f"{kind.lower()}::{ordinal}" in graph.nodes:
        ordinal += 1
    node_id = f"{kind.lower()}::{ordinal}"
    qtext = "\n".join(p for p in (text, anchor) if p)
    qvec = embedder.embed([qtext])
    pool_k = trace.params.max_fired if kind == "CORRECTION" and trace is not None else 0
    similar = _similar_nodes(index, graph, qtext, qvec[0], max(s.connect_k, pool_k))
    selection, suppressed, spared = "", list(targets), list[str]()
    if kind == "CORRECTION" and trace is not None and not targets:
        if all_fired:
            selection = "all"
            suppressed = [
                f for f in trace.fired if f in graph.nodes and graph.nodes[f].kind == CHUNK
            ]
        else:
            selection = "content"
            suppressed, spared = _by_content(graph, index, text, trace, similar[:pool_k], s)
    elif kind == "CORRECTION":
        selection = "targets"
    near = [n for n in similar[: s.connect_k] if n not in suppressed]
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
    blob = pack_matrix(qvec)
    events: list[Event] = [
        NodeInjected(
            node_id=node_id,
            node_type=kind,  # type: ignore[arg-type]
            content=text,
            connections=tuple(conns),
            anchor_query=anchor,
            chat_id=chat_id,
            trace_id=trace.trace_id if trace is not None else "",
        ),
        NodesEmbedded(embedder_id=embedder.id, blob=sha256(blob).hexdigest(), node_ids=(node_id,)),
    ]
    return Injection(events, [blob], node_id, selection, list(dict.fromkeys(suppressed)), spared)
