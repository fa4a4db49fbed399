"""Queries: deciding one (seeds, the walk and the context: state + question -> trace),
answering one on a store and recording its trace, and reading recorded traces back."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import msgspec

from ocb.engine.claims import claim_lines
from ocb.engine.dates import DAY_NS, date_in_query
from ocb.engine.embed import Embedder, Matrix
from ocb.engine.embedders import FusedEmbedder
from ocb.engine.passages import Passage, apart, cut_to, named_in, split, whole
from ocb.engine.routes import BORROWED, Plan, nearest_route, plan_route
from ocb.engine.search import SearchIndex, Seeding, best_rows, choose_seeds
from ocb.engine.stance import about, idf_of
from ocb.engine.traverse import (
    SEPARATOR,
    Scorer,
    Walk,
    block,
    block_chars,
    context_block,
    fire_nodes,
    traverse,
)
from ocb.redaction import redact_input, redact_key
from ocb.reports import Answer, Hit
from ocb.settings import Learning, Routes, Traversal, actor_of
from ocb.store import Store
from ocb_events.errors import BlobMissing, InputError, unknown
from ocb_events.schema import (
    QueryParams,
    QueryTraced,
    SeedHit,
)
from projections.graph import State


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
    plan: Plan | None = None,
    now: Callable[[], int] = lambda: 0,
    claims: Mapping[str, frozenset[int]] | None = None,
    qvec: Matrix | None = None,
) -> tuple[QueryTraced, list[Hit]]:
    """Seed, traverse (or follow the question's route, ``plan``) and rank: the trace to
    record and the results to return. ``claims`` holds, by file, the lines of what an
    assistant said and nothing confirmed: they are shown after every other result.
    ``qvec`` is the question's vector when the caller has embedded it already.

    Raises:
        InputError: the query is empty or ``top`` is not positive.
    """
    query = text.strip()
    if not query:
        raise InputError(
            "the query is empty", 'ask a question, e.g. ocb query "how do I roll back"'
        )
    if top < 1:
        raise InputError(f"`top` must be at least 1, got {top}", "pass `top=5`", param="top")
    when = date_in_query(query, now, s.date_around)
    dated, w = None, when.window
    if w is not None and w.start_ns > 0 and w.end_ns is not None:
        dated = (w.start_ns // DAY_NS, -(-w.end_ns // DAY_NS), s.date_slack, s.date_weight)
    qvec = embedder.embed([query])[0] if qvec is None else qvec
    # a model's meaning beside the hashed words weighs more against BM25
    lw = s.model_lexical_weight if isinstance(embedder, FusedEmbedder) else s.lexical_weight
    sd = choose_seeds(
        index, query, qvec, lw, max_seeds=s.max_seeds, seed_ratio=s.seed_ratio,
        top=top, expand=(s.expand_docs, s.expand_terms, s.expand_weight), dated=dated,
        lexical=when.lexical(query),
    )  # fmt: skip
    barred = unrelated_corrections(graph, index, query, s.correction_min_about)
    sd = _without(sd, index, barred)
    hyb, lex, cos, best = sd.hybrid, sd.lexical, sd.cosine, sd.best
    seeds = [(index.ids[i], float(hyb[i]) / best) for i in sd.chosen]
    pos = index.pos
    if plan is not None and plan.mode in BORROWED:
        plan = _borrowing(graph, index, sd, plan, barred)
    if plan is None:
        walk = traverse(
            graph, seeds, s, lambda v: float(cos[pos[v]]) if v in pos else 0.0,
            scorer=scorer, barred=barred,
        )  # fmt: skip
    elif plan.mode == "prior":
        budget = s.max_context_chars
        own = sum(block_chars(graph.nodes[n]) for n in plan.fire)
        room = msgspec.structs.replace(
            s, max_context_chars=min(budget, own + int(plan.share * budget))
        )
        mine = best_rows(index, hyb, plan.within, frozenset(plan.fire) | barred)
        walk = fire_nodes(graph, seeds, [*_route_nodes(index, sd, plan), *mine], room)
    else:
        walk = fire_nodes(graph, seeds, _route_nodes(index, sd, plan, barred), s)
    hidden = plan.vetoed if plan is not None else frozenset()
    hits = _results(
        graph, index, sd, walk, s.max_context_chars, top, hidden, query, s.passages, claims or {}
    )
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
            for i in sd.chosen
        ),
        steps=tuple(walk.steps),
        fired=tuple(walk.fired),
        vetoed=tuple(sorted(walk.vetoed)),
        stop_reason=walk.stop_reason,
        context_chars=walk.context_chars,
        params=_params(s, embedder.id),
        route=plan.route if plan is not None else "",
        route_mode=plan.mode if plan is not None else "",
    )
    return trace, hits[:top]


def unrelated_corrections(
    graph: State, index: SearchIndex, query: str, least: float
) -> frozenset[str]:
    """The corrections ``query`` is not about: the question they corrected and their
    content together hold less than ``least`` of its terms (``ocb.engine.stance.about``).
    They neither seed nor fire, so neither do their vetoes."""
    idf = idf_of(index)
    k, count, out = 1, graph.injected.get("CORRECTION", 0), set()
    while k <= count or f"correction::{k}" in graph.nodes:
        node = graph.nodes.get(f"correction::{k}")
        if node is not None and about(query, f"{node.text}\n{node.anchor}", idf) < least:
            out.add(node.id)
        k += 1
    return frozenset(out)


def _without(sd: Seeding, index: SearchIndex, barred: frozenset[str]) -> Seeding:
    """The seeding with the ``barred`` rows left out."""
    if not barred:
        return sd
    keep = [i for i in sd.ranked if index.ids[i] not in barred]
    chosen = [i for i in sd.chosen if index.ids[i] not in barred]
    return msgspec.structs.replace(sd, ranked=keep, chosen=chosen)


def _borrowing(
    graph: State, index: SearchIndex, sd: Seeding, plan: Plan, barred: frozenset[str]
) -> Plan | None:
    """A borrowed route's plan with only the chunks among the question's own
    ``plan.within`` best matches (None, a walk, when none is left)."""
    own = frozenset(best_rows(index, sd.hybrid, plan.within, barred))
    fire = tuple(n for n in plan.fire if n in own and n in graph.nodes)
    return msgspec.structs.replace(plan, fire=fire) if fire else None


def _route_nodes(
    index: SearchIndex, sd: Seeding, plan: Plan, barred: frozenset[str] = frozenset()
) -> list[str]:
    """What a route fires: its compiled nodes, best match first; or when exploring,
    the best matches it has not tried; or nothing (never a ``barred`` node)."""
    if plan.mode in ("compiled", *BORROWED):
        pos, hyb = index.pos, sd.hybrid
        fire = [n for n in plan.fire if n not in barred]
        return sorted(fire, key=lambda n: (-float(hyb[pos[n]]) if n in pos else 0.0, n))
    if plan.mode == "explore":
        return best_rows(index, sd.hybrid, plan.explore, plan.avoid | plan.vetoed | barred)
    return []


def _results(
    graph: State, index: SearchIndex, sd: Seeding, walk: Walk, budget: int, top: int,
    hidden: frozenset[str] = frozenset(), query: str = "", passages: bool = True,
    claims: Mapping[str, frozenset[int]] = {},  # noqa: B006 (read only)
) -> list[Hit]:  # fmt: skip
    """What fired, by activation, then the next-best matches (but ``hidden`` ones)
    only as far as the context budget would hold them too, so the results never carry
    more text than a context may; the best match that does not fit whole comes last,
    cut at a line boundary, when its first lines fit. Each as its passages
    (``ocb.engine.passages``): the lines of a speaker the question names first, the
    other speakers' lines after every focused passage, and the lines of ``claims``
    after all of them."""
    chosen = [(n, walk.activation[n], True) for n in walk.ranked()]
    room, cut = budget - walk.context_len, None
    for i in sd.ranked:
        if len(chosen) >= top:
            break
        nid = index.ids[i]
        if nid in hidden or nid in walk.vetoed or nid in walk.activation or nid not in graph.nodes:
            continue
        cost = block_chars(graph.nodes[nid]) + len(SEPARATOR)
        if cost <= room:
            room -= cost
            chosen.append((nid, float(sd.hybrid[i]) / sd.best, False))
        elif cut is None:
            cut = (nid, float(sd.hybrid[i]) / sd.best)
    names = named_in(query)
    focused: list[Hit] = []
    rest: list[Hit] = []
    said: list[Hit] = []
    for nid, score, fired in chosen:
        if len(focused) >= top:  # the rest would come after them: never shown
            break
        node = graph.nodes[nid]
        mine, others = split(node, names) if passages else ([whole(node)], [])
        lines = claims.get(node.path, frozenset())
        for group, into in ((mine, focused), (others, rest)):
            for p in group:
                kept, claimed = apart(p, lines, passages)
                into += [_hit(graph, q, score, fired) for q in kept]
                said += [_hit(graph, q, score, fired, claim=True) for q in claimed]
    if cut is not None and len(chosen) < top:
        node = graph.nodes[cut[0]]
        first = split(node, frozenset())[0][0] if passages else whole(node)
        part = cut_to(first, room - block_chars(node, "") - len(SEPARATOR))
        if part is not None:
            kept, claimed = apart(part, claims.get(node.path, frozenset()), passages)
            rest += [_hit(graph, q, cut[1], False) for q in kept]
            said += [_hit(graph, q, cut[1], False, claim=True) for q in claimed]
    return focused + rest + said


def assemble_context(graph: State, fired: Sequence[str], hits: Sequence[Hit]) -> str:
    """The fired nodes under their sources, in the order of the results and as the
    results show them (their passages), then the fired nodes beyond ``top`` whole, by
    firing order. The traversal fired only what fits, so this is never longer than
    ``traversal.max_context_chars``."""
    shown = [block(h.source, h.text) for h in hits if h.fired]
    seen = {h.id for h in hits if h.fired}
    rest = [context_block(graph.nodes[n]) for n in fired if n not in seen]
    return SEPARATOR.join(shown + rest)


def _hit(graph: State, p: Passage, score: float, fired: bool, *, claim: bool = False) -> Hit:
    n = graph.nodes[p.node]
    return Hit(
        id=n.id,
        source=p.source(n),
        text=p.text,
        score=round(score, 6),
        fired=fired,
        kind=n.kind,
        also=n.also,
        cut=p.cut,
        claim=claim,
    )


# --------------------------------------------------------------------------- on a store


def query(
    store: Store,
    text: str,
    *,
    top: int = 5,
    chat_id: str = "",
    record: bool = True,
    actor: str = "cli",
    **traversal: object,
) -> Answer:
    """Answer a query and record its trace as ``actor`` (see ``Brain.query``).

    Raises:
        InputError: an empty query or a bad setting.
    """
    return query_at(
        store, text, store.now, top=top, chat_id=chat_id, record=record, actor=actor, **traversal
    )


def query_at(
    store: Store,
    text: str,
    now: Callable[[], int],
    *,
    top: int = 5,
    chat_id: str = "",
    record: bool = True,
    actor: str = "cli",
    **traversal: object,
) -> Answer:
    """``query`` with the dates of the question read at ``now()``.

    Raises:
        InputError: an empty query or a bad setting.
    """
    record = record and store.as_of is None  # the past is read-only
    got: list[tuple[QueryTraced, list[Hit]]] = []

    def decide(_seq: int) -> list[QueryTraced]:
        got.append(decide_at(store, text, now, top=top, chat_id=chat_id, **traversal))
        return [got[-1][0]] if record else []

    store.transact(actor_of(actor), decide)
    trace, hits = got[-1]
    return Answer(
        trace_id=trace.trace_id if record else "",
        query=trace.query,
        results=hits,
        fired=list(trace.fired),
        stop_reason=trace.stop_reason,
        context_chars=trace.context_chars,
        context=assemble_context(store.graph, trace.fired, hits),
        chat_id=trace.chat_id,
        route=trace.route,
        route_mode=trace.route_mode,
        route_question=_route_question(store, trace),
        walk=trace,
    )


def _near(
    store: Store, embedder: Embedder, qvec: Matrix | None
) -> Callable[[str], tuple[str, float]] | None:
    """How a question (embedded as ``qvec``) finds the route a model's vectors put
    nearest, on a brain whose embedder carries a model
    (``ocb.engine.routes.nearest_route``); None otherwise."""
    if qvec is None or not isinstance(embedder, FusedEmbedder):
        return None
    if not store.state("routes").routes:
        return None
    model = embedder.second
    cache: dict[str, Matrix] = store.derived("route-vectors", model.id, dict)
    mine = embedder.second_of(qvec)

    def near(query: str) -> tuple[str, float]:
        return nearest_route(store.state("routes"), query, mine, model.embed, cache)

    return near


def _route_question(store: Store, trace: QueryTraced) -> str:
    """The question of the route ``trace`` borrowed ("" for its own, or none)."""
    if trace.route_mode not in BORROWED:
        return ""
    route = store.state("routes").routes.get(trace.route)
    return route.query if route is not None else ""


def decide_at(
    store: Store,
    text: str,
    now: Callable[[], int],
    *,
    top: int = 5,
    chat_id: str = "",
    **traversal: object,
) -> tuple[QueryTraced, list[Hit]]:
    """The trace a query on ``store`` would record now (trace ``t<last seq + 1>``: the
    query, its seeds, its walk or route and what fired, with the question's dates read
    at ``now()``) and its results; nothing is recorded.

    Raises:
        InputError: an empty query or a bad setting.
    """
    store.load("config", "graph", "routes", "memory")
    trav = store.setting(Traversal, **traversal)
    secrets = store.secrets()
    text = redact_input(store.warn, secrets, "query", text)
    chat_id = redact_key(store.warn, secrets, "chat id", chat_id)
    scorer = route_scorer(store) if trav.mode == "learned" else None
    if trav.mode == "learned" and scorer is None:
        store.warn("no route model trained (ocb train-route); routing with edge+sim")
        trav = msgspec.structs.replace(trav, mode="edge+sim")
    index = store.search_index()
    embedder = store.embedder()
    question = text.strip()  # embedded once, for its route and its seeds
    qvec = embedder.embed([question])[0] if question else None
    return decide_query(
        store.graph,
        index,
        embedder,
        text,
        trav,
        top=top,
        trace_id=f"t{store.log.last_seq + 1}",
        chat_id=chat_id,
        scorer=scorer,
        plan=plan_route(
            store.state("routes"),
            store.graph,
            text,
            store.setting(Routes),
            rule=store.setting(Learning).rule,
            vocab=index.vocab,
            idf=idf_of(index),
            near=_near(store, embedder, qvec),
        ),  # fmt: skip
        now=now,
        claims=_claims(store),
        qvec=qvec,
    )


def trace_of(store: Store, trace_id: str = "", chat_id: str = "") -> QueryTraced:
    """A recorded trace, by id or as the last trace of a chat.

    Raises:
        InputError: no such trace or chat.
    """
    tr = store.state("traces")
    if chat_id and not trace_id:
        chat_id = redact_key(store.warn, store.secrets(), "chat id", chat_id)
        trace_id = tr.last_by_chat.get(chat_id, "")
        if not trace_id:
            raise unknown(
                "chat id",
                chat_id,
                sorted(tr.last_by_chat),
                "pass `chat_id` to ocb query first",
                param="chat_id",
            )
    ref = tr.by_id.get(trace_id)
    if ref is None:
        raise unknown(
            "trace id",
            trace_id,
            sorted(tr.by_id)[-2000:],
            "use the trace_id printed by ocb query --json",
        )
    for rec in store.log.read(ref.seq, ref.seq):
        if isinstance(rec.event, QueryTraced):
            return rec.event
    raise unknown("trace id", trace_id, [], "the trace's record is missing; run ocb doctor")


def route_scorer(store: Store) -> Scorer | None:
    """The scorer of the route model in force, or None when none was trained (or its
    blob is unusable: a warning says so)."""
    from ocb.engine.route_model import load_scorer  # imported on use: few brains train one

    model = store.graph.route_model
    if model is None:
        return None
    try:
        return store.derived("route", model.blob, lambda: load_scorer(store.blobs.get(model.blob)))
    except (ValueError, BlobMissing) as exc:
        store.warn(f"route model {model.blob[:12]} unusable ({exc}); routing with edge+sim")
        return None


def _claims(store: Store) -> dict[str, frozenset[int]]:
    """The lines of the standing claims (``ocb.engine.claims``), kept while they stand."""
    mem = store.state("memory")
    return store.derived("claims", str(mem.claims_seq), lambda: claim_lines(mem))
