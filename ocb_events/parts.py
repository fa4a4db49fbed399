"""The value types nested inside events: chunks, edges, deltas, settings, trace steps,
facts, recall hits, reflect changes and seq ranges (``ocb_events.schema`` exports
them with the events).

NOTE: parts are stored as arrays (traces hold thousands of them), so their field order
is part of the storage format: add new fields only at the end, with defaults.
"""

# mypy: disable-error-code="misc"

from __future__ import annotations

from typing import Literal

import msgspec

FactKind = Literal["W", "B", "O", "S"]
Speaker = Literal["user", "assistant", "tool"]
"""Who said a fact: what an assistant says is a claim until an outcome confirms it."""


class _Part(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, array_like=True):
    """Base of the value types nested inside events.

    NOTE: parts are stored as arrays (traces hold thousands of them), so their field
    order is part of the storage format: add new fields only at the end, with defaults.
    """


class ChunkText(_Part):
    """A chunk as first recorded: its id, text and place in a file version.
    ``start_col`` is the character of ``start_line`` the text starts at: 0 for whole
    lines, the offset of a slice of a long line (see ``workspace_sync.markdown``)."""

    id: str
    text: str
    text_hash: str
    start_line: int
    end_line: int
    heading: str = ""
    start_col: int = 0


class ChunkSpan(_Part):
    """An unchanged chunk of an edited file, at its (possibly moved) line range and
    start column (see ``ChunkText``)."""

    id: str
    text_hash: str
    start_line: int
    end_line: int
    start_col: int = 0


class EdgeSpec(_Part):
    """A directed, signed edge as decided: source -> target with a weight and kind."""

    source: str
    target: str
    weight: float
    kind: str


class EdgeDelta(_Part):
    """A change of one edge's weight (target STOP: the source's stop weight). The
    flat view of ``EdgesUpdated``; not stored as such."""

    source: str
    target: str
    delta: float


class EdgeDeltas(_Part):
    """The weight changes of the edges out of one node, target by target (a target
    of STOP changes the node's stop weight)."""

    source: str
    targets: tuple[str, ...]
    deltas: tuple[float, ...]


class EdgeValues(_Part):
    """Values set on the edges out of one node, target by target."""

    source: str
    targets: tuple[str, ...]
    values: tuple[float, ...]


class NodeValue(_Part):
    """A number decided for one node (its reward baseline ...)."""

    node: str
    value: float


class RouteCredit(_Part):
    """A change of one node's credit on a route (see ``RouteUpdated``), with the
    ``text_hash`` of the node's text the credit is about."""

    node: str
    delta: float
    text_hash: str = ""


class EdgeRef(_Part):
    """A directed edge by its endpoints."""

    source: str
    target: str


class Setting(_Part):
    """One named parameter of an operation."""

    key: str
    value: float | int | bool | str


class LearnParams(_Part):
    """The settings a learning decision was made with, kept for audit and what-if:
    learning rate, the policy's temperature, discount, the rate of the per-node reward
    baselines, and the weight of the reward's source."""

    eta: float
    tau: float = 1.0
    gamma: float = 1.0
    baseline_rate: float = 0.0
    source_weight: float = 1.0


class SeedHit(_Part):
    """A seed candidate of a query: hybrid score and its lexical and vector parts."""

    node_id: str
    score: float
    lexical: float = 0.0
    vector: float = 0.0


class Candidate(_Part):
    """One outgoing edge considered at a traversal step. ``uses`` is how often the
    edge had been taken earlier in the episode (damping lambda^uses); ``logit`` is
    the route policy's score for it."""

    target: str
    weight: float
    logit: float
    tier: str
    uses: int = 0


class Step(_Part):
    """A decision point of a traversal: the node, its candidates, the STOP logit,
    the policy's choice (a target or STOP) and every target fired from here."""

    hop: int
    node: str
    candidates: tuple[Candidate, ...]
    stop_logit: float
    chosen: str
    followed: tuple[str, ...] = ()


class QueryParams(_Part):
    """The traversal settings a query ran with."""

    mode: str
    max_hops: int
    max_fired: int
    max_context_chars: int
    max_seeds: int
    tau: float
    damping: float
    reflex: float
    habitual: float
    inhibitory: float
    alpha: float
    fire_threshold: float
    branch: int
    embedder_id: str = ""
    visit_penalty: float = 0.0


class FactSpec(_Part):
    """One fact of a workspace file as parsed from its bullet: kind, content, the
    @entities it mentions (sorted, in their first spelling), its line range, salience
    and (opinions, claims) confidence in [0, 1], the day of its daily log (ISO date, ""
    for a page without a date), the ``path#L`` evidence links it carries, and who said
    it (``speaker``; with the ``session`` and ``turn`` of a conversation, when known)."""

    id: str
    kind: FactKind
    content: str
    entities: tuple[str, ...]
    start_line: int
    end_line: int
    text_hash: str
    salience: float
    confidence: float = 0.0
    day: str = ""
    evidence: tuple[str, ...] = ()
    speaker: Speaker = "user"
    session: str = ""
    turn: int = 0


class RecallHit(_Part):
    """A fact returned by recall: its composite score and the parts of it (match,
    salience, access decay) and, when associative activation reached it, the entity
    path it came through."""

    fact_id: str
    score: float
    match: float = 0.0
    salience: float = 0.0
    access: float = 0.0
    via: tuple[str, ...] = ()


class ReflectChange(_Part):
    """One file change reflect decided: an entity summary rewritten or an opinion's
    confidence moved, with the facts that support and contradict it."""

    path: str
    subject: str
    change: str
    before: str
    after: str
    supporting: tuple[str, ...] = ()
    contradicting: tuple[str, ...] = ()


class SeqRange(_Part):
    """Seqs ``first`` to ``last``, inclusive."""

    first: int
    last: int
