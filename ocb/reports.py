"""What the brain's commands return: plain structs the CLI renders as text or JSON."""

from __future__ import annotations

import msgspec

from ocb_events.schema import EdgeDelta, QueryTraced


class Hit(msgspec.Struct, frozen=True):
    """One retrieval result."""

    id: str
    source: str
    text: str
    score: float
    fired: bool
    kind: str
    also: tuple[str, ...] = ()
    cut: bool = False  # the budget cut it short at a line boundary
    claim: bool = False
    """The lines of what an assistant said and nothing confirmed (ranked last)."""


class Answer(msgspec.Struct):
    """What a query returns: the ranked results, the fired context and its trace id."""

    trace_id: str
    query: str
    results: list[Hit]
    fired: list[str]
    stop_reason: str
    context_chars: int
    context: str
    chat_id: str = ""
    route: str = ""
    """The route the query followed ("" when it walked the graph)."""
    route_mode: str = ""
    """``compiled``, ``explore`` or ``spent``; ``borrowed`` or ``prior`` when it followed
    another question's route (see ``ocb.engine.routes``)."""
    route_question: str = ""
    """The question whose route it followed when that is another question's."""
    walk: QueryTraced | None = None
    """The trace as decided (seeds, steps with their candidates, vetoes), recorded or
    not; ``answer_json`` leaves it out unless asked (``walk_json``)."""


class SyncReport(msgspec.Struct):
    """What a sync recorded: the one summary of a sync, counted while its plan is
    decided (``ocb.graph.sync``) and completed with the brain's size once recorded."""

    files_indexed: int = 0
    files_changed: int = 0
    files_removed: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    edges_created: int = 0
    events: int = 0
    nodes: int = 0
    edges: int = 0
    skipped: list[tuple[str, str]] = msgspec.field(default_factory=list)
    facts: int = 0
    fact_files: int = 0
    fact_problems: list[str] = msgspec.field(default_factory=list)
    blobs_regenerated: int = 0
    secrets: list[tuple[str, int, int, str]] = msgspec.field(default_factory=list)
    """Secrets redacted from the recorded text: (path, line, end line, kind)."""
    chunks_revised: int = 0
    """Chunks that kept their id (and their edges) with a new text, heading or place."""
    files_moved: int = 0
    """Files renamed or moved: their chunks kept their ids."""


class LearnReport(msgspec.Struct):
    """What an outcome recorded: its seq and the weight deltas it caused."""

    outcome_seq: int
    trace_id: str
    rule: str
    source: str
    reward: float
    deltas: list[EdgeDelta]
    recorded: bool = True
    """False when a retry named a request id already recorded: nothing new was written."""
    route: str = ""
    """The route the outcome changed (``route`` rule), "" when none."""
    credits: dict[str, float] = msgspec.field(default_factory=dict)
    """The change of each node's credit on that route."""
    used: list[str] = msgspec.field(default_factory=list)
    """The fired nodes credited as used: those given and those the citations named."""
    unmatched: list[str] = msgspec.field(default_factory=list)
    """The citations that named no chunk the trace fired (ignored)."""
    confirmed: list[str] = msgspec.field(default_factory=list)
    """The claims (facts an assistant said) this outcome confirmed."""


class Cited(msgspec.Struct, frozen=True):
    """A node by id with its source (``path#Lstart-Lend``)."""

    id: str
    source: str


class InjectReport(msgspec.Struct):
    """The injected node and its connections (``created`` False for a duplicate); for
    a CORRECTION how it chose what to veto (``targets``, ``all`` or ``content``), the
    chunks it vetoes and the fired chunks it left alone."""

    node_id: str
    created: bool
    connections: int
    inhibits: list[str]
    selection: str = ""
    vetoed: list[Cited] = msgspec.field(default_factory=list)
    spared: list[Cited] = msgspec.field(default_factory=list)


class ReembedReport(msgspec.Struct):
    """What ``ocb reembed`` recorded: the embedder before and after, its spec, how
    many vectors were made, and the seq of the last record (0: nothing changed)."""

    before: str
    after: str
    spec: str
    vectors: int
    seq: int
