"""Hypothesis strategies for the event vocabulary: one builder per event type.

``st.builds`` only fills a Struct's required fields, so every defaulted field gets an
explicit strategy here; otherwise round trips would never see a non-default value.

Reusable names:
    any_event       one event of any type
    event_lists     lists of events (a batch may be empty)
    event_batches   non-empty lists of events (one append)
    EVENT_BUILDERS  event type -> builder (a function returning a strategy)
    events()        the one_of of every builder
    records()       whole log records (seq, ts, actor, event)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from ocb_events.schema import (
    STOP,
    AuthoritySet,
    Candidate,
    ChunkSpan,
    ChunkText,
    ConfigChanged,
    ContentForgotten,
    EdgeDeltas,
    EdgeRef,
    EdgeRelevanceSet,
    EdgesCreated,
    EdgeSpec,
    EdgesRemoved,
    EdgesUpdated,
    EdgeValues,
    EmbedderConfigured,
    Event,
    FactSpec,
    FactsRecorded,
    FileChanged,
    FileIndexed,
    FileMoved,
    FileRemoved,
    KgFactSet,
    LearnParams,
    LogRepaired,
    MaintenanceRan,
    NodeInjected,
    NodesEmbedded,
    NodesMerged,
    NodeSplit,
    NodeValue,
    OutcomeRecorded,
    QueryParams,
    QueryTraced,
    RecallHit,
    RecallTraced,
    Record,
    RecordLost,
    ReflectChange,
    ReflectRan,
    Retracted,
    RouteCredit,
    RouteModelTrained,
    RouteUpdated,
    SeedHit,
    SeqRange,
    Setting,
    Step,
    TeacherLabeled,
    TurnWarmed,
    WorkspaceAttached,
)

# ------------------------------------------------------------------ scalars

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

printable = st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Co", "Cn"))
"""Printable unicode that UTF-8 can encode (no controls, surrogates or unassigned)."""

texts = st.text(printable, max_size=20)
multiline_texts = st.text(st.one_of(printable, st.just("\n")), max_size=60)
ids = st.text(printable, min_size=1, max_size=12)
id_tuples = st.lists(ids, max_size=4).map(tuple)
hashes = st.text("0123456789abcdef", min_size=8, max_size=64)
paths = st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8}){0,2}\.md", fullmatch=True)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
unit_floats = st.floats(-1.0, 1.0, allow_nan=False)
small_floats = st.floats(-1e6, 1e6, allow_nan=False)
int64s = st.integers(INT64_MIN, INT64_MAX)
line_numbers = st.integers(1, 1_000_000)
counts = st.integers(0, 10_000)
seqs = st.integers(1, 2**62)
timestamps = st.integers(0, INT64_MAX)
actors = st.one_of(
    st.sampled_from(["cli", "daemon", "sync", "maintenance", "teacher", "human"]), texts
)


def _tuples(elements: st.SearchStrategy[Any], max_size: int = 3) -> st.SearchStrategy[Any]:
    return st.lists(elements, max_size=max_size).map(tuple)


# ------------------------------------------------------------------ nested parts


def chunk_texts() -> st.SearchStrategy[ChunkText]:
    return st.builds(
        ChunkText,
        id=ids,
        text=multiline_texts,
        text_hash=hashes,
        start_line=line_numbers,
        end_line=line_numbers,
        heading=texts,
        start_col=st.integers(0, 5000),
    )


def chunk_spans() -> st.SearchStrategy[ChunkSpan]:
    return st.builds(
        ChunkSpan,
        id=ids,
        text_hash=hashes,
        start_line=line_numbers,
        end_line=line_numbers,
        start_col=st.integers(0, 5000),
    )


def edge_specs() -> st.SearchStrategy[EdgeSpec]:
    return st.builds(EdgeSpec, source=ids, target=ids, weight=unit_floats, kind=texts)


def edge_deltas() -> st.SearchStrategy[EdgeDeltas]:
    pairs = st.lists(st.tuples(st.one_of(ids, st.just(STOP)), small_floats), max_size=4)
    return st.builds(
        lambda source, ps: EdgeDeltas(
            source=source, targets=tuple(t for t, _ in ps), deltas=tuple(d for _, d in ps)
        ),
        ids,
        pairs,
    )


def learn_params() -> st.SearchStrategy[LearnParams]:
    return st.builds(
        LearnParams,
        eta=finite_floats,
        tau=finite_floats,
        gamma=finite_floats,
        baseline_rate=finite_floats,
        source_weight=finite_floats,
    )


def seed_hits() -> st.SearchStrategy[SeedHit]:
    return st.builds(
        SeedHit, node_id=ids, score=finite_floats, lexical=finite_floats, vector=finite_floats
    )


def candidates() -> st.SearchStrategy[Candidate]:
    return st.builds(
        Candidate,
        target=ids,
        weight=unit_floats,
        logit=finite_floats,
        tier=st.sampled_from(["reflex", "habitual", "dormant", "inhibitory"]),
        uses=counts,
    )


def steps() -> st.SearchStrategy[Step]:
    return st.builds(
        Step,
        hop=counts,
        node=ids,
        candidates=_tuples(candidates()),
        stop_logit=finite_floats,
        chosen=st.one_of(ids, st.just(STOP)),
        followed=id_tuples,
    )


def query_params() -> st.SearchStrategy[QueryParams]:
    return st.builds(
        QueryParams,
        mode=st.sampled_from(["weight", "relevance", "learned"]),
        max_hops=counts,
        max_fired=counts,
        max_context_chars=counts,
        max_seeds=counts,
        tau=finite_floats,
        damping=finite_floats,
        reflex=unit_floats,
        habitual=unit_floats,
        inhibitory=unit_floats,
        alpha=finite_floats,
        fire_threshold=finite_floats,
        branch=counts,
        embedder_id=texts,
        visit_penalty=finite_floats,
    )


# ------------------------------------------------------------------ events, one per type


def workspace_attached() -> st.SearchStrategy[WorkspaceAttached]:
    return st.builds(WorkspaceAttached, root=texts)


def file_indexed() -> st.SearchStrategy[FileIndexed]:
    return st.builds(FileIndexed, path=paths, content_hash=hashes, chunks=_tuples(chunk_texts()))


def file_changed() -> st.SearchStrategy[FileChanged]:
    return st.builds(
        FileChanged,
        path=paths,
        content_hash=hashes,
        added=_tuples(chunk_texts()),
        kept=_tuples(chunk_spans()),
        removed=id_tuples,
        revised=_tuples(chunk_texts()),
    )


def file_removed() -> st.SearchStrategy[FileRemoved]:
    return st.builds(FileRemoved, path=paths, removed=id_tuples)


def file_moved() -> st.SearchStrategy[FileMoved]:
    return st.builds(FileMoved, old_path=paths, path=paths, content_hash=hashes)


def embedder_configured() -> st.SearchStrategy[EmbedderConfigured]:
    return st.builds(EmbedderConfigured, embedder_id=ids, dim=st.integers(1, 4096))


def nodes_embedded() -> st.SearchStrategy[NodesEmbedded]:
    digests = st.text("0123456789abcdef", min_size=64, max_size=64)
    return st.builds(NodesEmbedded, embedder_id=ids, blob=digests, node_ids=id_tuples)


def edges_created() -> st.SearchStrategy[EdgesCreated]:
    return st.builds(EdgesCreated, edges=_tuples(edge_specs()), cause=texts)


def edges_updated() -> st.SearchStrategy[EdgesUpdated]:
    return st.builds(
        EdgesUpdated,
        updates=_tuples(edge_deltas()),
        rule=st.sampled_from(["heuristic", "reinforce"]),
        cause_seq=st.integers(0, 2**62),
        params=st.none() | learn_params(),
        baselines=_tuples(st.builds(NodeValue, node=ids, value=small_floats)),
    )


def _edge_values() -> st.SearchStrategy[EdgeValues]:
    pairs = st.lists(st.tuples(ids, small_floats), max_size=4)
    return st.builds(
        lambda source, ps: EdgeValues(
            source=source, targets=tuple(t for t, _ in ps), values=tuple(v for _, v in ps)
        ),
        ids,
        pairs,
    )


def edges_removed() -> st.SearchStrategy[EdgesRemoved]:
    refs = st.builds(EdgeRef, source=ids, target=ids)
    return st.builds(EdgesRemoved, edges=_tuples(refs), cause_seq=st.integers(0, 2**62))


def edge_relevance_set() -> st.SearchStrategy[EdgeRelevanceSet]:
    return st.builds(
        EdgeRelevanceSet, updates=_tuples(_edge_values()), cause_seq=st.integers(0, 2**62)
    )


def authority_set() -> st.SearchStrategy[AuthoritySet]:
    return st.builds(
        AuthoritySet,
        authority=st.sampled_from(["constitutional", "canonical", "overlay"]),
        node_ids=id_tuples,
        path=texts,
    )


def maintenance_ran() -> st.SearchStrategy[MaintenanceRan]:
    values = st.one_of(finite_floats, int64s, st.booleans(), texts)
    settings = _tuples(st.builds(Setting, key=ids, value=values))
    return st.builds(MaintenanceRan, op=ids, params=settings, summary=texts)


def teacher_labeled() -> st.SearchStrategy[TeacherLabeled]:
    pairs = st.lists(st.tuples(ids, unit_floats), max_size=4)
    return st.builds(
        lambda trace_id, hop, node, ps, teacher: TeacherLabeled(
            trace_id=trace_id,
            hop=hop,
            node=node,
            targets=tuple(t for t, _ in ps),
            scores=tuple(x for _, x in ps),
            teacher=teacher,
        ),
        ids,
        counts,
        ids,
        pairs,
        texts,
    )


def route_model_trained() -> st.SearchStrategy[RouteModelTrained]:
    digests = st.text("0123456789abcdef", min_size=64, max_size=64)
    return st.builds(
        RouteModelTrained,
        blob=digests,
        features=id_tuples,
        examples=counts,
        trained_to_seq=st.integers(0, 2**62),
        accuracy=unit_floats,
    )


def route_updated() -> st.SearchStrategy[RouteUpdated]:
    credits = st.builds(RouteCredit, node=ids, delta=small_floats, text_hash=hashes)
    return st.builds(
        RouteUpdated,
        route_id=ids,
        cause_seq=st.integers(0, 2**62),
        credits=_tuples(credits),
        misses=st.integers(-100, 100),
        key=texts,
        query=texts,
    )


def nodes_merged() -> st.SearchStrategy[NodesMerged]:
    return st.builds(
        NodesMerged,
        kept=ids,
        absorbed=ids,
        cause_seq=st.integers(0, 2**62),
        edges=_tuples(edge_specs()),
    )


def node_split() -> st.SearchStrategy[NodeSplit]:
    return st.builds(
        NodeSplit,
        node_id=ids,
        parts=_tuples(chunk_texts()),
        cause_seq=st.integers(0, 2**62),
        edges=_tuples(edge_specs()),
    )


def node_injected() -> st.SearchStrategy[NodeInjected]:
    return st.builds(
        NodeInjected,
        node_id=ids,
        node_type=st.sampled_from(["CORRECTION", "TEACHING", "DIRECTIVE"]),
        content=multiline_texts,
        connections=_tuples(edge_specs()),
        anchor_query=texts,
        chat_id=texts,
        trace_id=texts,
        authority=st.sampled_from(["constitutional", "canonical", "overlay"]),
    )


def config_changed() -> st.SearchStrategy[ConfigChanged]:
    values = st.one_of(finite_floats, int64s, st.booleans(), texts)
    return st.builds(ConfigChanged, key=ids, value=values)


def query_traced() -> st.SearchStrategy[QueryTraced]:
    return st.builds(
        QueryTraced,
        trace_id=ids,
        query=texts,
        seeds=_tuples(seed_hits()),
        steps=_tuples(steps(), max_size=2),
        fired=id_tuples,
        stop_reason=st.sampled_from(["stop", "max_hops", "max_fired", "max_context_chars"]),
        context_chars=counts,
        params=query_params(),
        chat_id=texts,
        vetoed=id_tuples,
        route=texts,
        route_mode=st.sampled_from(["", "compiled", "explore", "spent"]),
    )


def outcome_recorded() -> st.SearchStrategy[OutcomeRecorded]:
    return st.builds(
        OutcomeRecorded,
        reward=unit_floats,
        source=st.sampled_from(["human", "self", "harvester", "teacher"]),
        trace_id=texts,
        chat_id=texts,
        fired_ids=id_tuples,
        request_id=texts,
        used=id_tuples,
        rule=st.sampled_from(["", "route", "pg", "heuristic"]),
        cited=id_tuples,
        confirmed=id_tuples,
    )


fractions = st.floats(0.0, 1.0, allow_nan=False)
kinds = st.sampled_from(["W", "B", "O", "S"])


def fact_specs() -> st.SearchStrategy[FactSpec]:
    return st.builds(
        FactSpec,
        id=ids,
        kind=kinds,
        content=multiline_texts,
        entities=id_tuples,
        start_line=st.integers(1, 10_000),
        end_line=st.integers(1, 10_000),
        text_hash=hashes,
        salience=fractions,
        confidence=fractions,
        day=st.sampled_from(["", "2026-11-20", "1999-01-31"]),
        evidence=id_tuples,
        speaker=st.sampled_from(["user", "assistant", "tool"]),
        session=texts,
        turn=st.integers(0, 1_000),
    )


def facts_recorded() -> st.SearchStrategy[FactsRecorded]:
    return st.builds(
        FactsRecorded,
        path=paths,
        content_hash=st.one_of(st.just(""), hashes),
        facts=_tuples(fact_specs()),
        cause=st.sampled_from(["sync", "retain", "reflect"]),
    )


def recall_traced() -> st.SearchStrategy[RecallTraced]:
    hits = st.builds(
        RecallHit,
        fact_id=ids,
        score=finite_floats,
        match=fractions,
        salience=fractions,
        access=fractions,
        via=id_tuples,
    )
    return st.builds(
        RecallTraced,
        trace_id=ids,
        query=texts,
        hits=_tuples(hits),
        options=_tuples(st.builds(Setting, key=ids, value=st.one_of(int64s, texts))),
        context_chars=counts,
        dropped=counts,
    )


def reflect_ran() -> st.SearchStrategy[ReflectRan]:
    change = st.builds(
        ReflectChange,
        path=paths,
        subject=ids,
        change=st.sampled_from(["entity_summary", "opinion_confidence"]),
        before=texts,
        after=texts,
        supporting=id_tuples,
        contradicting=id_tuples,
    )
    return st.builds(ReflectRan, since_ns=timestamps, priority=id_tuples, changes=_tuples(change))


def kg_fact_set() -> st.SearchStrategy[KgFactSet]:
    return st.builds(KgFactSet, subject=ids, predicate=ids, value=texts, source=texts)


def record_lost() -> st.SearchStrategy[RecordLost]:
    return st.builds(RecordLost, reason=texts, segment=texts, offset=counts)


def log_repaired() -> st.SearchStrategy[LogRepaired]:
    ranges = _tuples(st.builds(SeqRange, first=seqs, last=seqs))
    return st.builds(LogRepaired, lost=ranges, torn_bytes=counts, rebased_from=counts, reason=texts)


def content_forgotten() -> st.SearchStrategy[ContentForgotten]:
    return st.builds(
        ContentForgotten,
        what=texts,
        seqs=_tuples(seqs),
        fields=counts,
        blobs=counts,
        reason=texts,
    )


def retracted() -> st.SearchStrategy[Retracted]:
    return st.builds(
        Retracted,
        target_seq=seqs,
        kind=st.sampled_from(["outcome", "label", "injection"]),
        node_id=texts,
        reason=texts,
    )


def turn_warmed() -> st.SearchStrategy[TurnWarmed]:
    return st.builds(
        TurnWarmed,
        path=paths,
        chain=hashes,
        turn=counts,
        trace_id=texts,
        session_id=texts,
        replied=st.booleans(),
    )


EVENT_BUILDERS: dict[type[Event], Callable[[], st.SearchStrategy[Any]]] = {
    WorkspaceAttached: workspace_attached,
    FileIndexed: file_indexed,
    FileChanged: file_changed,
    FileRemoved: file_removed,
    EmbedderConfigured: embedder_configured,
    NodesEmbedded: nodes_embedded,
    EdgesCreated: edges_created,
    EdgesUpdated: edges_updated,
    NodeInjected: node_injected,
    ConfigChanged: config_changed,
    QueryTraced: query_traced,
    OutcomeRecorded: outcome_recorded,
    EdgesRemoved: edges_removed,
    EdgeRelevanceSet: edge_relevance_set,
    AuthoritySet: authority_set,
    MaintenanceRan: maintenance_ran,
    TeacherLabeled: teacher_labeled,
    RouteModelTrained: route_model_trained,
    RouteUpdated: route_updated,
    NodesMerged: nodes_merged,
    NodeSplit: node_split,
    FactsRecorded: facts_recorded,
    RecallTraced: recall_traced,
    ReflectRan: reflect_ran,
    KgFactSet: kg_fact_set,
    RecordLost: record_lost,
    LogRepaired: log_repaired,
    ContentForgotten: content_forgotten,
    Retracted: retracted,
    FileMoved: file_moved,
    TurnWarmed: turn_warmed,
}
"""Every event type of ``ocb_events.schema.EVENT_TYPES`` with its builder."""


def events() -> st.SearchStrategy[Event]:
    """One event of any type."""
    return st.one_of([build() for build in EVENT_BUILDERS.values()])


def records(event: st.SearchStrategy[Event] | None = None) -> st.SearchStrategy[Record]:
    """A log record around ``event`` (any event by default)."""
    return st.builds(
        Record, seq=seqs, ts=timestamps, actor=actors, event=events() if event is None else event
    )


any_event = events()
event_lists = st.lists(any_event, max_size=5)
event_batches = st.lists(any_event, min_size=1, max_size=5)
any_record = records()
