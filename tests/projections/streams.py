"""Hypothesis strategies for event streams that exercise the folds: ids come from
small pools so files, chunks, edges, updates and injections refer to each other
(and sometimes to things that do not exist, which a fold must tolerate)."""

from __future__ import annotations

from hypothesis import strategies as st

from ocb.engine.learning import group_by_source
from ocb_events.schema import (
    STOP,
    AuthoritySet,
    ChunkSpan,
    ChunkText,
    ConfigChanged,
    ContentForgotten,
    EdgeDelta,
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
    SeqRange,
    TeacherLabeled,
    TurnWarmed,
    WorkspaceAttached,
)

PATHS = ["a.md", "b.md", "notes/c.md"]
NODE_IDS = [f"{p}::{i}" for p in PATHS for i in range(4)] + ["correction::1", "teaching::1"]
weights = st.floats(-1.5, 1.5, allow_nan=False, allow_infinity=False)
node_ids = st.sampled_from(NODE_IDS)
texts = st.text(alphabet="abc xyz\n", max_size=20)


def _chunk(path: str, i: int, text: str) -> ChunkText:
    return ChunkText(
        id=f"{path}::{i}",
        text=text,
        text_hash=str(hash(text) & 0xFFFF),
        start_line=i + 1,
        end_line=i + 1,
    )


@st.composite
def file_indexed(draw: st.DrawFn) -> FileIndexed:
    path = draw(st.sampled_from(PATHS))
    n = draw(st.integers(1, 4))
    chunks = tuple(_chunk(path, i, draw(texts)) for i in range(n))
    return FileIndexed(
        path=path, content_hash=draw(st.text("0123456789", min_size=1, max_size=4)), chunks=chunks
    )


@st.composite
def file_changed(draw: st.DrawFn) -> FileChanged:
    path = draw(st.sampled_from(PATHS))
    ids = draw(st.lists(st.integers(0, 5), max_size=4, unique=True))
    kept = tuple(
        ChunkSpan(id=f"{path}::{i}", text_hash="k", start_line=i + 2, end_line=i + 3)
        for i in ids[:2]
    )
    added = tuple(_chunk(path, i + 4, draw(texts)) for i in ids[2:])
    revised = tuple(
        _chunk(path, i, draw(texts))
        for i in draw(st.lists(st.integers(0, 5), max_size=2, unique=True))
        if i not in ids[:2]
    )
    removed = tuple(
        sorted(
            draw(
                st.lists(
                    st.sampled_from([f"{path}::{i}" for i in range(4)]), max_size=2, unique=True
                )
            )
        )
    )
    return FileChanged(
        path=path, content_hash="c", added=added, kept=kept, removed=removed, revised=revised
    )


@st.composite
def file_moved(draw: st.DrawFn) -> FileMoved:
    """A file renamed (its chunks keep ids of their old path), sometimes onto a file
    that exists or from one that does not."""
    old, new = draw(st.sampled_from(PATHS)), draw(st.sampled_from([*PATHS, "d.md"]))
    return FileMoved(old_path=old, path=new, content_hash=draw(st.sampled_from(["c", "m"])))


@st.composite
def file_removed(draw: st.DrawFn) -> FileRemoved:
    path = draw(st.sampled_from(PATHS))
    return FileRemoved(
        path=path, removed=tuple(f"{path}::{i}" for i in range(draw(st.integers(0, 4))))
    )


@st.composite
def node_split(draw: st.DrawFn) -> NodeSplit:
    path = draw(st.sampled_from(PATHS))
    node = f"{path}::{draw(st.integers(0, 3))}"
    n = draw(st.integers(0, 3))
    parts = tuple(_chunk(path, 6 + i, draw(texts)) for i in range(n))
    edges = draw(st.lists(edge_specs, max_size=3))
    seq = draw(st.integers(0, 50))
    return NodeSplit(node_id=node, parts=parts, cause_seq=seq, edges=tuple(edges))


edge_specs = st.builds(
    EdgeSpec,
    source=node_ids,
    target=node_ids,
    weight=weights,
    kind=st.sampled_from(["sibling", "similar"]),
)
deltas = st.builds(
    EdgeDelta, source=node_ids, target=st.one_of(node_ids, st.just(STOP)), delta=weights
)

PARAMS = QueryParams(
    mode="edge",
    max_hops=3,
    max_fired=30,
    max_context_chars=6000,
    max_seeds=4,
    tau=1.0,
    damping=0.3,
    reflex=0.6,
    habitual=0.2,
    inhibitory=-0.01,
    alpha=0.3,
    fire_threshold=0.05,
    branch=1,
)

FACT_IDS = [f"f{i}" for i in range(1, 7)]
ENTITIES = ["Peter", "peter", "Alice", "db", "api"]
fractions = st.floats(0, 1)


@st.composite
def facts_recorded(draw: st.DrawFn) -> FactsRecorded:
    path = draw(st.sampled_from(["memory/2026-11-20.md", "bank/opinions.md", "a.md"]))
    fids = draw(st.lists(st.sampled_from(FACT_IDS), max_size=3, unique=True))
    facts = tuple(
        FactSpec(
            id=fid,
            kind=draw(st.sampled_from(["W", "B", "O", "S"])),
            content=draw(texts),
            entities=tuple(sorted(set(draw(st.lists(st.sampled_from(ENTITIES), max_size=3))))),
            start_line=i + 1,
            end_line=i + 1,
            text_hash=draw(st.sampled_from(["h1", "h2"])),
            salience=draw(fractions),
            confidence=draw(fractions),
            day=draw(st.sampled_from(["", "2026-11-20", "2026-11-27"])),
        )
        for i, fid in enumerate(fids)
    )
    gone = draw(st.booleans()) and not facts
    return FactsRecorded(path=path, content_hash="" if gone else "c1", facts=facts)


memory_events = st.one_of(
    facts_recorded(),
    st.builds(
        RecallTraced,
        trace_id=st.just("r1"),
        query=texts,
        hits=st.lists(
            st.builds(RecallHit, fact_id=st.sampled_from(FACT_IDS), score=fractions), max_size=3
        ).map(tuple),
        dropped=st.integers(0, 2),
    ),
    st.builds(
        ReflectRan,
        since_ns=st.integers(0, 10**6),
        changes=st.lists(
            st.builds(
                ReflectChange,
                path=st.just("bank/opinions.md"),
                subject=st.sampled_from(FACT_IDS),
                change=st.sampled_from(["opinion_confidence", "entity_summary"]),
                before=st.just("0.5"),
                after=st.just("0.55"),
                supporting=st.lists(st.sampled_from(FACT_IDS), max_size=2).map(tuple),
            ),
            max_size=2,
        ).map(tuple),
    ),
    st.builds(
        KgFactSet,
        subject=st.sampled_from(["Discord API", "discord api", "db"]),
        predicate=st.sampled_from(["rate_limit", "owner"]),
        value=texts,
        source=st.sampled_from(["", "a.md#L1"]),
    ),
)


events: st.SearchStrategy[Event] = st.one_of(
    file_indexed(),
    file_changed(),
    file_removed(),
    file_moved(),
    st.builds(
        EdgesCreated, edges=st.lists(edge_specs, max_size=6).map(tuple), cause=st.just("test")
    ),
    st.builds(
        EdgesUpdated,
        updates=st.lists(deltas, max_size=6).map(group_by_source),
        baselines=st.lists(
            st.builds(NodeValue, node=node_ids, value=st.floats(-1, 1)), max_size=2
        ).map(tuple),
        rule=st.sampled_from(["pg", "heuristic"]),
        cause_seq=st.integers(0, 50),
    ),
    st.builds(
        NodeInjected,
        node_id=st.sampled_from(["correction::1", "teaching::1", "directive::1"]),
        node_type=st.sampled_from(["CORRECTION", "TEACHING", "DIRECTIVE"]),
        content=texts,
        connections=st.lists(edge_specs, max_size=3).map(tuple),
    ),
    st.builds(WorkspaceAttached, root=st.sampled_from(["/w", "/v"])),
    st.builds(
        EdgesRemoved,
        edges=st.lists(st.builds(EdgeRef, source=node_ids, target=node_ids), max_size=4).map(tuple),
        cause_seq=st.integers(0, 50),
    ),
    st.builds(
        EdgeRelevanceSet,
        updates=st.lists(
            st.builds(
                lambda src, t, v: EdgeValues(source=src, targets=(t,), values=(v,)),
                node_ids,
                node_ids,
                weights,
            ),
            max_size=3,
        ).map(tuple),
        cause_seq=st.integers(0, 50),
    ),
    st.builds(
        AuthoritySet,
        authority=st.sampled_from(["constitutional", "canonical", "overlay"]),
        node_ids=st.lists(node_ids, max_size=2).map(tuple),
        path=st.sampled_from(["", *PATHS]),
    ),
    st.builds(MaintenanceRan, op=st.sampled_from(["decay", "prune"])),
    st.builds(
        NodesMerged,
        kept=node_ids,
        absorbed=node_ids,
        cause_seq=st.integers(0, 50),
        edges=st.lists(edge_specs, max_size=3).map(tuple),
    ),
    node_split(),
    st.builds(
        RouteModelTrained,
        blob=st.sampled_from(["m1", "m2"]),
        features=st.just(("weight",)),
        examples=st.integers(0, 9),
        trained_to_seq=st.integers(0, 9),
    ),
    st.builds(EmbedderConfigured, embedder_id=st.sampled_from(["e1", "e2"]), dim=st.just(4)),
    st.builds(
        NodesEmbedded,
        embedder_id=st.sampled_from(["e1", "e2"]),
        blob=st.sampled_from(["b1", "b2"]),
        node_ids=st.lists(node_ids, max_size=3, unique=True).map(tuple),
    ),
    st.builds(
        ConfigChanged,
        key=st.sampled_from(["traversal.max_hops", "learning.eta"]),
        value=st.one_of(st.integers(1, 5), st.floats(0, 1)),
    ),
    st.builds(
        QueryTraced,
        trace_id=st.sampled_from(["t1", "t2", "t3"]),
        query=texts,
        seeds=st.just(()),
        steps=st.just(()),
        fired=st.lists(node_ids, max_size=3).map(tuple),
        stop_reason=st.just("max_hops"),
        context_chars=st.integers(0, 100),
        params=st.just(PARAMS),
        chat_id=st.sampled_from(["", "c1", "c2"]),
    ),
    st.builds(
        OutcomeRecorded,
        reward=st.floats(-1, 1),
        source=st.sampled_from(["human", "self"]),
        trace_id=st.sampled_from(["", "t1", "t2"]),
        request_id=st.sampled_from(["", "r1", "r2"]),
    ),
    memory_events,
    st.builds(
        Retracted,
        target_seq=st.integers(1, 50),
        kind=st.sampled_from(["outcome", "label", "injection"]),
        node_id=st.sampled_from(["", "correction::1", "teaching::1", "a.md::0"]),
        reason=texts,
    ),
    st.builds(RecordLost, reason=st.just("damaged record")),  # a tombstone of a repair
    st.builds(LogRepaired, lost=st.just((SeqRange(first=1, last=2),)), rebased_from=st.just(1)),
    st.builds(ContentForgotten, what=st.just("record 3"), seqs=st.just((3,))),
    st.builds(  # a route's change, or the reversal of one (no key) that may find none
        RouteUpdated,
        route_id=st.sampled_from(["r1", "r2", "r3"]),
        cause_seq=st.integers(1, 50),
        credits=st.lists(
            st.builds(
                RouteCredit,
                node=node_ids,
                delta=st.sampled_from([-0.5, -0.25, 0.25, 0.5]) | weights,
                text_hash=st.sampled_from(["", "h1", "h2"]),
            ),
            max_size=3,
        ).map(tuple),
        misses=st.integers(-1, 2),
        key=st.sampled_from(["", "deploy", "deploy log", "log"]),
        query=texts,
    ),
    st.builds(  # a teacher's label: no projection folds it
        TeacherLabeled,
        trace_id=st.sampled_from(["t1", "t2"]),
        hop=st.integers(0, 3),
        node=node_ids,
        targets=st.just(("a.md::1",)),
        scores=st.just((0.5,)),
    ),
    st.builds(  # a warmed turn beside its trace: no projection folds it
        TurnWarmed,
        path=st.sampled_from(["/s/a.jsonl", "/s/b.jsonl"]),
        chain=st.sampled_from(["c1", "c2"]),
        turn=st.integers(0, 3),
        trace_id=st.sampled_from(["", "t1", "t2"]),
        replied=st.booleans(),
    ),
)


def as_records(evs: list[Event], start: int = 1) -> list[Record]:
    """Records with gap-free seqs and non-decreasing timestamps."""
    return [
        Record(seq=start + i, ts=1_000 * (start + i), actor="test", event=e)
        for i, e in enumerate(evs)
    ]  # type: ignore[arg-type]


streams = st.lists(events, max_size=40)
