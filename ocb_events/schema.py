"""The event vocabulary of a brain: every payload the log can hold.

NOTE: the tag of each event is its storage format. Never rename a tag and never
reuse one; the class name may change. New fields come with defaults; a field's type
or meaning never changes (add a new event type instead). Events are stored as maps of
field names; the parts nested inside them as arrays, so a part's new field goes last.

Every event is a frozen, keyword-only msgspec Struct under ``Event``. Events state
what was *decided* and its cause, never the inputs needed to recompute it, so that a
fold applies decisions and replay does not depend on the code of a rule.

Units: ``ts`` is nanoseconds since the Unix epoch; line numbers are 1-based and
inclusive; weights are in [-1, 1]; rewards are in [-1, 1].
"""

# mypy: disable-error-code="misc"
# (msgspec subclasses inherit ``frozen`` from their base; mypy's dataclass model of
# Structs does not know that and flags every event class)

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from ocb_events.parts import (
    Candidate as Candidate,
    ChunkSpan as ChunkSpan,
    ChunkText as ChunkText,
    EdgeDelta as EdgeDelta,
    EdgeDeltas as EdgeDeltas,
    EdgeRef as EdgeRef,
    EdgeSpec as EdgeSpec,
    EdgeValues as EdgeValues,
    FactKind as FactKind,
    FactSpec as FactSpec,
    LearnParams as LearnParams,
    NodeValue as NodeValue,
    QueryParams as QueryParams,
    RecallHit as RecallHit,
    ReflectChange as ReflectChange,
    RouteCredit as RouteCredit,
    SeedHit as SeedHit,
    SeqRange as SeqRange,
    Setting as Setting,
    Speaker as Speaker,
    Step as Step,
)

STOP = "<STOP>"
"""The target name of the STOP action in traversal steps and learning deltas."""

RewardSource = Literal["human", "self", "harvester", "teacher"]
NodeType = Literal["CORRECTION", "TEACHING", "DIRECTIVE"]
Authority = Literal["constitutional", "canonical", "overlay"]


class Event(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="type"):
    """Base of every payload in the log."""


# --------------------------------------------------------------------------- workspace


class WorkspaceAttached(Event, tag="workspace_attached"):
    """Emitted once when a brain is created from a workspace. Folded by graph."""

    root: str


class FileIndexed(Event, tag="file_indexed"):
    """A file seen for the first time, with all of its chunks. Folded by graph."""

    path: str
    content_hash: str
    chunks: tuple[ChunkText, ...]


class FileChanged(Event, tag="file_changed"):
    """A file whose content changed: new chunks, kept chunks at their new ranges,
    removed chunk ids, and ``revised`` chunks: chunks that keep their id (and so their
    edges, weights and authority) with a new text, heading or place (the revision rule
    of ``workspace_sync.diff``); their new vectors follow in NodesEmbedded. Folded by
    graph and vectors."""

    path: str
    content_hash: str
    added: tuple[ChunkText, ...] = ()
    kept: tuple[ChunkSpan, ...] = ()
    removed: tuple[str, ...] = ()
    revised: tuple[ChunkText, ...] = ()


class FileRemoved(Event, tag="file_removed"):
    """A file that left the workspace, with the ids of its chunks. Folded by graph
    and vectors."""

    path: str
    removed: tuple[str, ...]


class FileMoved(Event, tag="file_moved"):
    """A file renamed or moved (``old_path`` gone, ``path`` new; ``content_hash`` is the
    content it had at ``old_path``): its chunks keep their ids (``old_path::n`` stays an
    opaque id), edges, weights and vectors, and now cite ``path``. A file moved and
    edited at once is this event followed by a ``FileChanged`` at ``path``. Folded by
    graph."""

    old_path: str
    path: str
    content_hash: str


# --------------------------------------------------------------------------- vectors


class EmbedderConfigured(Event, tag="embedder_configured"):
    """The embedder that builds this brain's vectors, and the spec that makes it again
    (``ocb.engine.embedders``; "" for the built-in hashed one). Folded by vectors."""

    embedder_id: str
    dim: int
    spec: str = ""


class NodesEmbedded(Event, tag="nodes_embedded"):
    """Vectors for nodes, stored as one content-addressed blob (sha256 of its bytes)
    whose rows follow ``node_ids``. Folded by vectors."""

    embedder_id: str
    blob: str
    node_ids: tuple[str, ...]


# --------------------------------------------------------------------------- graph


class EdgesCreated(Event, tag="edges_created"):
    """New edges and why they were made (``cause``: sibling, similar ...). Folded by
    graph; an edge whose endpoint is missing is ignored."""

    edges: tuple[EdgeSpec, ...]
    cause: str = ""


class EdgesUpdated(Event, tag="edges_updated"):
    """Weight deltas decided by a learning rule, grouped by source node, with their
    cause (the seq of the outcome that produced them). Folded by graph:
    w = clip(w + delta, -1, 1). ``baselines`` are the nodes' new running-average rewards
    (the policy gradient's per-node baseline), decided with the update."""

    updates: tuple[EdgeDeltas, ...]
    rule: str
    cause_seq: int
    params: LearnParams | None = None
    baselines: tuple[NodeValue, ...] = ()

    @property
    def deltas(self) -> tuple[EdgeDelta, ...]:
        """Every change as one (source, target, delta), in stored order."""
        return tuple(
            EdgeDelta(source=u.source, target=t, delta=d)
            for u in self.updates
            for t, d in zip(u.targets, u.deltas, strict=True)
        )


class NodeInjected(Event, tag="node_injected"):
    """A CORRECTION, TEACHING or DIRECTIVE node with its connections. A correction's
    ``anchor_query`` is the query it corrects, indexed beside its content. Folded by
    graph."""

    node_id: str
    node_type: NodeType
    content: str
    connections: tuple[EdgeSpec, ...] = ()
    anchor_query: str = ""
    chat_id: str = ""
    trace_id: str = ""
    authority: Authority = "overlay"


class EdgesRemoved(Event, tag="edges_removed"):
    """Edges taken out of the graph (maintenance prune), naming the maintenance run
    that decided it. Folded by graph."""

    edges: tuple[EdgeRef, ...]
    cause_seq: int


class EdgeRelevanceSet(Event, tag="edge_relevance_set"):
    """Relevance of edges in [-1, 1] (from teacher labels), added to an edge's logit by
    the ``edge`` route modes. Folded by graph."""

    updates: tuple[EdgeValues, ...]
    cause_seq: int


class AuthoritySet(Event, tag="authority_set"):
    """Authority of nodes: ``constitutional`` (never decays, pruned or merged),
    ``canonical`` (decays at half rate) or ``overlay`` (the default), for listed nodes
    or for every chunk of a file, present and future. Folded by graph."""

    authority: Authority
    node_ids: tuple[str, ...] = ()
    path: str = ""


class MaintenanceRan(Event, tag="maintenance_ran"):
    """A maintenance operation (decay, prune, merge, split, connect, scale) with its
    parameters; the changes it decided follow it and name its seq as their cause.
    Folded by graph (the time of each operation's last run)."""

    op: str
    params: tuple[Setting, ...] = ()
    summary: str = ""


class TeacherLabeled(Event, tag="teacher_labeled"):
    """A teacher's verdict on a recorded decision point (trace, hop, node): a score in
    [-1, 1] for each candidate target it judged. Its EdgesUpdated follows with
    cause_seq = this record's seq."""

    trace_id: str
    hop: int
    node: str
    targets: tuple[str, ...]
    scores: tuple[float, ...]
    teacher: str = ""


class RouteModelTrained(Event, tag="route_model_trained"):
    """A route model trained from recorded traces and labels, stored as blob ``blob``
    (weights over ``features``); the ``learned`` route mode uses the newest one.
    Folded by graph."""

    blob: str
    features: tuple[str, ...]
    examples: int
    trained_to_seq: int
    accuracy: float = 0.0


class RouteUpdated(Event, tag="route_updated"):
    """An outcome's change to a query-anchored route (decided by the ``route`` learning
    rule, cause_seq = the outcome's seq; or its reversal, cause_seq = a retraction's).
    A route belongs to one question (``key``: its sorted query terms, set when the
    route is created with its ``query``); each node's credit on it moves by its delta
    and now refers to the node's text as ``text_hash``; ``misses`` is the change of the
    route's count of failed answers. Folded by routes."""

    route_id: str
    cause_seq: int
    credits: tuple[RouteCredit, ...] = ()
    misses: int = 0
    key: str = ""
    query: str = ""


class NodesMerged(Event, tag="nodes_merged"):
    """A near-duplicate chunk (``absorbed``) merged into another (``kept``) by the
    maintenance run at ``cause_seq``. ``edges`` are set as decided: the absorbed chunk's
    edges rewired to the kept one (the stronger weight where both had an edge). The
    absorbed chunk stays only as an alias holding its place in its file (id, path,
    lines, text hash, so a re-sync of its file still recognises it): its text and edges
    are dropped, no edge can reach it, and the kept chunk cites its source in
    ``Node.also``. A NodesEmbedded with a zero vector for the alias follows, so search
    never seeds it. Folded by graph."""

    kept: str
    absorbed: str
    cause_seq: int
    edges: tuple[EdgeSpec, ...] = ()


class NodeSplit(Event, tag="node_split"):
    """An oversized chunk cut at line boundaries into ``parts`` (new ids ``path::n``
    with exact line ranges of its file) by the maintenance run at ``cause_seq``.
    ``edges`` are set as decided (the old node's outgoing edges from every part, its
    incoming edges into the first, sibling edges between consecutive parts). The parts
    take the old node's place in its file,
    its authority, stop weight and baseline; the old node is removed. Vectors of the
    parts follow in NodesEmbedded. Folded by graph."""

    node_id: str
    parts: tuple[ChunkText, ...]
    cause_seq: int
    edges: tuple[EdgeSpec, ...] = ()


class ConfigChanged(Event, tag="config_changed"):
    """A setting changed (traversal, learning ...). Folded by config."""

    key: str
    value: float | int | bool | str


# --------------------------------------------------------------------------- traces


class QueryTraced(Event, tag="query_traced"):
    """A query and everything its traversal decided. Folded by traces."""

    trace_id: str
    query: str
    seeds: tuple[SeedHit, ...]
    steps: tuple[Step, ...]
    fired: tuple[str, ...]
    stop_reason: str
    context_chars: int
    params: QueryParams
    chat_id: str = ""
    vetoed: tuple[str, ...] = ()
    route: str = ""
    """The route the query followed ("" when it walked the graph)."""
    route_mode: str = ""
    """How it followed it: ``compiled`` (fired the route's chunks), ``explore`` (fired
    the best chunks the route has not tried) or ``spent`` (fired nothing)."""


class OutcomeRecorded(Event, tag="outcome_recorded"):
    """A scored trace (or an explicit list of fired ids). Folded by traces, and by
    memory (``confirmed``); its EdgesUpdated follows with cause_seq = this record's seq."""

    reward: float
    source: RewardSource
    trace_id: str = ""
    chat_id: str = ""
    fired_ids: tuple[str, ...] = ()
    request_id: str = ""
    """The caller's idempotency key: a second outcome with the same key is not recorded."""
    used: tuple[str, ...] = ()
    """The fired nodes the answer used or cited."""
    rule: str = ""
    """The learning rule that decided the outcome's changes ("" in logs from before it
    was recorded: the rule of its ``edges_updated``, or the config's)."""
    cited: tuple[str, ...] = ()
    """The citations the answer wrote (``path#L12-L20``, ``path``), as given; those that
    named fired chunks put them in ``used``."""
    confirmed: tuple[str, ...] = ()
    """The ids of the claims (facts an assistant said) this outcome confirms. Folded by
    memory: a confirmed claim ranks as evidence; retracting the outcome takes it back."""


class TurnWarmed(Event, tag="turn_warmed"):
    """A turn of an agent's transcript (a user message and the answer that followed)
    warmed into the brain by ``ocb warm``, recorded in the same append as its query's
    trace (``trace_id``) and the outcome and correction its evidence gave it. ``chain``
    is the digest of the turn's texts and of every turn before it in its transcript (how
    a transcript read again is known); ``path`` the file it was read from, ``session_id``
    the OpenClaw session's id ("" for flat lines), ``turn`` its index among the
    transcript's answered turns (from 0). ``replied``: the user's next message was known
    when its outcome was decided (a correction in a message read later is recorded then,
    with a new ``turn_warmed`` for the same chain). Folded by nothing: ``ocb warm`` reads
    them to know what it has read."""

    path: str
    chain: str
    turn: int
    trace_id: str = ""
    session_id: str = ""
    replied: bool = False


# --------------------------------------------------------------------------- typed memory

"""W world, B experience (biographical), O opinion (with confidence), S summary."""


class FactsRecorded(Event, tag="facts_recorded"):
    """The facts of one workspace file after it was indexed, edited (or retained into)
    or removed: every current fact of the file. A fact id that keeps its place is a
    revision of that fact; ids of the file that are missing are retired (their history
    stays in the log). ``content_hash`` is "" when the file is gone. ``cause`` is
    sync, retain or reflect. Folded by memory."""

    path: str
    content_hash: str
    facts: tuple[FactSpec, ...] = ()
    cause: str = "sync"


class RecallTraced(Event, tag="recall_traced"):
    """A recall and what it returned (in rank order, within the budget); the options it
    ran with as settings; how many results the character budget left out. Folded by
    memory (access: each returned fact's ``last_accessed`` and ``access_count``)."""

    trace_id: str
    query: str
    hits: tuple[RecallHit, ...]
    options: tuple[Setting, ...] = ()
    context_chars: int = 0
    dropped: int = 0


class ReflectRan(Event, tag="reflect_ran"):
    """A reflect run: its window start (ns), the priority facts it considered and the
    changes it wrote under ``bank/`` (the files' new facts follow as
    ``facts_recorded`` with cause reflect). Folded by memory (evidence already used)."""

    since_ns: int
    priority: tuple[str, ...] = ()
    changes: tuple[ReflectChange, ...] = ()


class KgFactSet(Event, tag="kg_fact_set"):
    """A current fact was stated (or verified again): subject, predicate, value and the
    source it came from (``path#L14`` or free text). The latest value wins; older
    ones stay in the history. Folded by kg."""

    subject: str
    predicate: str
    value: str
    source: str = ""


# --------------------------------------------------------------------------- the log itself


class RecordLost(Event, tag="record_lost"):
    """A tombstone that ``ocb verify --repair`` put in place of a record that was
    damaged or lost: its seq is kept, its ts is that of the last whole record before
    it, its content is gone. Folded by nothing."""

    reason: str
    segment: str = ""
    offset: int = 0


class LogRepaired(Event, tag="log_repaired"):
    """``ocb verify --repair`` replaced damaged or lost records with tombstones
    (``lost``) and dropped ``torn_bytes`` of an unfinished batch; the hash chain was
    recomputed from ``rebased_from`` (0: unchanged). Folded by nothing."""

    lost: tuple[SeqRange, ...] = ()
    torn_bytes: int = 0
    rebased_from: int = 0
    reason: str = ""


class ContentForgotten(Event, tag="content_forgotten"):
    """``ocb forget`` erased content from the records ``seqs`` (their payloads now hold a
    redaction marker; seqs, framing, checksums and the hash chain are intact). ``what``
    names what was asked for (never the content itself), ``fields`` counts the text
    fields rewritten, ``blobs`` the vector blobs re-embedded. Folded by nothing."""

    what: str
    seqs: tuple[int, ...] = ()
    fields: int = 0
    blobs: int = 0
    reason: str = ""


# --------------------------------------------------------------------------- retraction

RetractKind = Literal["outcome", "label", "injection"]


class Retracted(Event, tag="retracted"):
    """A recorded outcome, teacher label or injection taken back (``target_seq``: its
    seq; ``kind``: which of the three). The record it names stays in the log; its
    reversal follows in the same batch, naming this record's seq as its cause: for an
    outcome or a label an ``EdgesUpdated`` (rule ``retract``) with the opposite of the
    changes it made and the restored baselines, and an ``EdgeRelevanceSet`` restoring
    the relevance a label set; for an injection nothing follows: the graph fold removes
    the node ``node_id`` and every edge into or out of it. Folded by graph, and by
    memory (a claim the outcome confirmed is a claim again)."""

    target_seq: int
    kind: RetractKind
    node_id: str = ""
    reason: str = ""


AnyEvent = (
    WorkspaceAttached
    | FileIndexed
    | FileChanged
    | FileRemoved
    | EmbedderConfigured
    | NodesEmbedded
    | EdgesCreated
    | EdgesUpdated
    | NodeInjected
    | ConfigChanged
    | QueryTraced
    | OutcomeRecorded
    | EdgesRemoved
    | EdgeRelevanceSet
    | AuthoritySet
    | MaintenanceRan
    | TeacherLabeled
    | RouteModelTrained
    | RouteUpdated
    | NodesMerged
    | NodeSplit
    | FactsRecorded
    | RecallTraced
    | ReflectRan
    | KgFactSet
    | RecordLost
    | LogRepaired
    | ContentForgotten
    | Retracted
    | FileMoved
    | TurnWarmed
)

EVENT_TYPES: tuple[type[Event], ...] = get_args(AnyEvent)


class QueryTracedHead(Event, tag="query_traced"):
    """The head of a ``query_traced`` record: what folds need of a trace. Replay
    decodes traces to this and skips their seeds and steps."""

    trace_id: str
    chat_id: str = ""


# AnyEvent with traces reduced to their head (tests/ocb_events check the mirror)
FoldEvent = (
    WorkspaceAttached
    | FileIndexed
    | FileChanged
    | FileRemoved
    | EmbedderConfigured
    | NodesEmbedded
    | EdgesCreated
    | EdgesUpdated
    | NodeInjected
    | ConfigChanged
    | QueryTracedHead
    | OutcomeRecorded
    | EdgesRemoved
    | EdgeRelevanceSet
    | AuthoritySet
    | MaintenanceRan
    | TeacherLabeled
    | RouteModelTrained
    | RouteUpdated
    | NodesMerged
    | NodeSplit
    | FactsRecorded
    | RecallTraced
    | ReflectRan
    | KgFactSet
    | RecordLost
    | LogRepaired
    | ContentForgotten
    | Retracted
    | FileMoved
    | TurnWarmed
)


class Record(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the log: gap-free ``seq`` (from 1), ``ts`` in ns, the ``actor``
    that caused it (cli, daemon, sync, maintenance, teacher, human) and the event."""

    seq: int
    ts: int
    actor: str
    event: AnyEvent


class FoldRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A record as replay decodes it for folding (traces reduced to their head)."""

    seq: int
    ts: int
    actor: str
    event: FoldEvent


def tag_of(event: Event) -> str:
    """The storage tag of an event, e.g. ``"query_traced"``."""
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag
