"""What an audit returns (``replay.audit``): an edge's changes with their causes, a
node's life, injections, accesses and route credit changes."""

from __future__ import annotations

from typing import Any

import msgspec


class Cause(msgspec.Struct, frozen=True, omit_defaults=True):
    """The record a change names as its cause (``kind``: outcome, maintenance,
    injection, teacher, sync, retraction or the change's own record) and what it
    carried. A retraction names the record it took back (``target_seq``,
    ``target_kind``), its ``reason``, and for an outcome its reward, source and trace;
    for an injection the removed ``node_id``."""

    seq: int
    kind: str
    type: str = ""
    actor: str = ""
    ts: str = ""
    reward: float | None = None
    reward_source: str = ""
    trace_id: str = ""
    trace_seq: int | None = None
    query: str = ""
    chat_id: str = ""
    path: list[str] = []
    fired_ids: list[str] = []
    op: str = ""
    params: dict[str, Any] = {}
    summary: str = ""
    node_id: str = ""
    node_type: str = ""
    content: str = ""
    teacher: str = ""
    hop: int | None = None
    file: str = ""
    file_action: str = ""
    content_hash: str = ""
    target_seq: int | None = None
    target_kind: str = ""
    reason: str = ""


class WeightChange(msgspec.Struct, frozen=True):
    """One change of an edge's weight (``before`` None: created, ``after`` None: removed)."""

    seq: int
    ts: str
    before: float | None
    after: float | None
    rule: str
    event: str
    cause: Cause


class EdgeAudit(msgspec.Struct, frozen=True):
    """An edge now (None fields when it no longer exists) and every change to it."""

    source: str
    target: str
    exists: bool
    weight: float | None
    kind: str
    tier: str
    as_of_seq: int
    changes: list[WeightChange]


class LifeEvent(msgspec.Struct, frozen=True):
    """One step of a node's life: created, edited, moved, renamed (its file moved;
    ``detail``: the old path), removed, merged_into, absorbed, split_into, split_from,
    injected, retracted, authority (``other``: the node on the other side of a merge or
    split; ``content_hash``: the file version)."""

    seq: int
    ts: str
    action: str
    path: str
    start_line: int
    end_line: int
    content_hash: str
    other: str
    detail: str


class Access(msgspec.Struct, frozen=True):
    """A query that fired the node (``rank``: its place in the fired list)."""

    seq: int
    ts: str
    trace_id: str
    query: str
    chat_id: str
    rank: int
    route: str = ""
    """The route it followed ("" for a walk)."""
    route_mode: str = ""
    """How (``compiled``, ``explore``, ``spent``; ``borrowed`` or ``prior``: another
    question's route)."""


class RouteChange(msgspec.Struct, frozen=True):
    """A change of the node's credit in a route: the route and its question, the
    change, and what caused it: an ``outcome`` (its trace, source and reward) or a
    ``retraction`` (of ``target_seq``)."""

    seq: int
    ts: str
    route: str
    question: str
    delta: float
    cause_seq: int
    cause: str
    trace_id: str = ""
    source: str = ""
    reward: float | None = None
    target_seq: int | None = None


class NodeAudit(msgspec.Struct, frozen=True):
    """A node now (``exists`` False once removed), its life, injections, weight
    changes around it and its access history (the newest ``limit`` listed)."""

    id: str
    exists: bool
    path: str
    start_line: int
    end_line: int
    kind: str
    authority: str
    created_seq: int | None
    alias_of: str
    stop: float | None
    life: list[LifeEvent]
    injections: list[Cause]
    changes_out: int
    changes_in: int
    accesses: int
    first_access: str
    last_access: str
    recent: list[Access]
    as_of_seq: int
    routes: list[RouteChange] = msgspec.field(default_factory=list)
