"""The golden log's contents: the appends that wrote ``tests/golden/log-v1``
(``golden_batches``, in the first storage format) and the records it must decode to
(``expected_records``)."""

from __future__ import annotations

from pathlib import Path

from ocb_events.schema import (
    STOP,
    Candidate,
    ChunkSpan,
    ChunkText,
    ConfigChanged,
    EdgeDeltas,
    EdgesCreated,
    EdgeSpec,
    EdgesUpdated,
    EmbedderConfigured,
    Event,
    FileChanged,
    FileIndexed,
    FileRemoved,
    LearnParams,
    NodeInjected,
    NodesEmbedded,
    OutcomeRecorded,
    QueryParams,
    QueryTraced,
    Record,
    SeedHit,
    Step,
    WorkspaceAttached,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "log-v1"
START_NS = 1_767_225_600_000_000_000
STEP_NS = 1_000_000
SEGMENT_BYTES = 1024


_PARAMS = QueryParams(
    mode="weight",
    max_hops=3,
    max_fired=8,
    max_context_chars=2000,
    max_seeds=4,
    tau=1.0,
    damping=0.5,
    reflex=0.6,
    habitual=0.2,
    inhibitory=-0.01,
    alpha=0.25,
    fire_threshold=0.1,
    branch=2,
)


def golden_batches() -> list[tuple[str, list[Event]]]:
    """The appends that made the golden log: (actor, events), every event type (most
    of them twice), with defaulted fields both left out and set."""
    a1 = ChunkText(
        id="a.md#1",
        text="# Deploy\nrun make",
        text_hash="h1",
        start_line=1,
        end_line=2,
        heading="Deploy",
    )
    a2 = ChunkText(id="a.md#2", text="then check logs", text_hash="h2", start_line=3, end_line=3)
    b1 = ChunkText(id="b.md#1", text="ünïcödé ✓ notes", text_hash="h3", start_line=1, end_line=1)
    step = Step(
        hop=0,
        node="a.md#1",
        candidates=(
            Candidate(target="a.md#2", weight=0.7, logit=0.7, tier="reflex"),
            Candidate(target="b.md#1", weight=-0.3, logit=-0.3, tier="inhibitory", uses=1),
        ),
        stop_logit=0.0,
        chosen="a.md#2",
        followed=("a.md#2",),
    )
    return [
        ("cli", [WorkspaceAttached(root="/home/me/workspace")]),
        (
            "cli",
            [
                EmbedderConfigured(embedder_id="hash-64", dim=64),
                ConfigChanged(key="traversal.max_hops", value=3),
                ConfigChanged(key="learning.eta", value=0.1),
                ConfigChanged(key="learning.enabled", value=True),
                ConfigChanged(key="route.mode", value="weight"),
            ],
        ),
        (
            "sync",
            [
                FileIndexed(path="a.md", content_hash="c1", chunks=(a1, a2)),
                FileIndexed(path="b.md", content_hash="c2", chunks=(b1,)),
            ],
        ),
        (
            "sync",
            [
                NodesEmbedded(embedder_id="hash-64", blob="ab" * 32, node_ids=("a.md#1", "a.md#2")),
                NodesEmbedded(embedder_id="hash-64", blob="cd" * 32, node_ids=("b.md#1",)),
            ],
        ),
        (
            "maintenance",
            [
                EdgesCreated(
                    edges=(EdgeSpec(source="a.md#1", target="a.md#2", weight=0.5, kind="sibling"),),
                    cause="sibling",
                ),
                EdgesCreated(
                    edges=(EdgeSpec(source="a.md#1", target="b.md#1", weight=-0.3, kind="similar"),)
                ),
            ],
        ),
        (
            "daemon",
            [
                QueryTraced(
                    trace_id="t1",
                    query="how do I deploy?",
                    seeds=(SeedHit(node_id="a.md#1", score=0.9, lexical=0.5, vector=0.4),),
                    steps=(step,),
                    fired=("a.md#1", "a.md#2"),
                    stop_reason="stop",
                    context_chars=32,
                    params=_PARAMS,
                    chat_id="chat-1",
                    vetoed=("b.md#1",),
                ),
            ],
        ),
        (
            "human",
            [
                OutcomeRecorded(reward=1.0, source="human", trace_id="t1", chat_id="chat-1"),
                EdgesUpdated(
                    updates=(
                        EdgeDeltas(
                            source="a.md#1", targets=("a.md#2", STOP), deltas=(0.066, -0.021)
                        ),
                    ),
                    rule="reinforce",
                    cause_seq=14,
                    params=LearnParams(
                        eta=0.1, tau=1.0, gamma=0.9, baseline_rate=0.1, source_weight=1.0
                    ),
                ),
            ],
        ),
        (
            "teacher",
            [
                NodeInjected(
                    node_id="correction::1",
                    node_type="CORRECTION",
                    content="never deploy on Fridays",
                    connections=(
                        EdgeSpec(
                            source="correction::1", target="a.md#1", weight=-0.5, kind="inhibits"
                        ),
                    ),
                    anchor_query="deploy friday",
                    chat_id="chat-1",
                    trace_id="t1",
                    authority="constitutional",
                ),
                NodeInjected(
                    node_id="teaching::1", node_type="TEACHING", content="logs live in /var"
                ),
            ],
        ),
        (
            "sync",
            [
                FileChanged(
                    path="a.md",
                    content_hash="c3",
                    added=(
                        ChunkText(
                            id="a.md#3", text="rollback", text_hash="h4", start_line=4, end_line=4
                        ),
                    ),
                    kept=(ChunkSpan(id="a.md#1", text_hash="h1", start_line=1, end_line=2),),
                    removed=("a.md#2",),
                ),
                FileChanged(path="b.md", content_hash="c4"),
                FileRemoved(path="b.md", removed=("b.md#1",)),
                FileRemoved(path="c.md", removed=()),
            ],
        ),
        (
            "daemon",
            [
                QueryTraced(
                    trace_id="t2",
                    query="rollback",
                    seeds=(),
                    steps=(),
                    fired=(),
                    stop_reason="max_hops",
                    context_chars=0,
                    params=_PARAMS,
                ),
                OutcomeRecorded(reward=-0.5, source="self", fired_ids=("a.md#3",)),
                EdgesUpdated(updates=(), rule="heuristic", cause_seq=23),
            ],
        ),
    ]


def expected_records() -> list[Record]:
    """The records the golden log must decode to: seqs from 1, one clock tick per
    append (ts in ns from ``START_NS``)."""
    out: list[Record] = []
    for i, (actor, events) in enumerate(golden_batches()):
        ts = START_NS + i * STEP_NS
        out.extend(
            Record(seq=len(out) + 1, ts=ts, actor=actor, event=e)  # type: ignore[arg-type]
            for e in events
        )
    return out
