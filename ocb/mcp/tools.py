"""The MCP tools: each is one call of the daemon's protocol (``ocb.daemon.methods``),
its arguments typed (the SDK derives each tool's JSON Schema from them) and its answer
as the daemon shapes it (``ocb.wire``). Each tool says whether it records (``tool``);
``TOOL_NAMES`` and ``READ_ONLY`` are derived from that. What a tool records is
recorded with actor ``mcp``. A failed call becomes a tool error (``isError``) carrying
the message and the hint that names the fix, both in the tool's terms
(``ocb.mcp.errors``); the server keeps serving.

NOTE: a tool's docstring is the description a model reads to choose it: say when to
use it and what it returns, not how it works.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from ocb.daemon.methods import PARAMS, Asked
from ocb.daemon.protocol import RpcError
from ocb.mcp.backend import Backend
from ocb.mcp.errors import in_tool_terms
from ocb_events.schema import FactKind, RewardSource

__all__ = ["READ_ONLY", "TOOL_NAMES", "Tools", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
TraceId = Annotated[
    str, Field(description="The trace_id a memory_search returned (or give chat_id).")
]
ChatId = Annotated[
    str, Field(description="The chat id passed to memory_search: its latest search is meant.")
]


def tool(*, read_only: bool) -> Callable[[F], F]:
    """Mark a method of ``Tools`` as a tool, saying whether it records nothing
    (``read_only``: the hint hosts show). Every tool has the mark; a test says which
    lacks one."""

    def mark(fn: F) -> F:
        fn.read_only = read_only  # type: ignore[attr-defined]
        return fn

    return mark


ACTOR = "mcp"
"""The actor of what the tools record."""
_ASKED = frozenset(name for name, params in PARAMS.items() if issubclass(params, Asked))
"""The methods that take the ``actor`` param."""


class Tools:
    """The tools over one backend; ``TOOL_NAMES`` lists them in the order they are
    registered."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def _call(self, tool: str, method: str, **params: Any) -> dict[str, Any]:
        """The method's answer (a JSON object), or a ToolError with the hint, both said
        in ``tool``'s terms."""
        if method in _ASKED:
            params["actor"] = ACTOR
        try:
            got: dict[str, Any] = self._backend.call(
                method, {k: v for k, v in params.items() if v is not None}
            )
            return got
        except RpcError as exc:
            raise ToolError(in_tool_terms(tool, exc.message, exc.hint)) from None

    @tool(read_only=False)
    def memory_search(
        self,
        query: Annotated[str, Field(description="What to look for, in plain words.")],
        limit: Annotated[int, Field(ge=1, le=50, description="How many results.")] = 5,
        chat_id: Annotated[str, Field(description="Your chat id, for feedback.")] = "",
    ) -> dict[str, Any]:
        """Search the agent's long-term memory (notes, runbooks, daily logs) before
        answering anything that prior work, decisions, people, preferences or
        procedures could inform. Returns the best chunks with path, startLine, endLine,
        score, a snippet and a citation (path#Lx-Ly) to quote, and the trace_id of this
        search: pass it to memory_feedback once you know whether the results helped,
        or to memory_correct when they misled."""
        got = self._call("memory_search", "search", text=query, top=limit, chat_id=chat_id)
        return {"trace_id": got["trace_id"], "results": got["results"]}

    @tool(read_only=True)
    def memory_get(
        self,
        path: Annotated[str, Field(description="A workspace path, as a result shows it.")],
        from_: Annotated[
            int, Field(alias="from", ge=1, description="First line to read (1-based).")
        ] = 1,
        lines: Annotated[
            int | None, Field(ge=1, description="How many lines (default: to the end).")
        ] = None,
    ) -> dict[str, Any]:
        """Read lines of a file of the memory's workspace, e.g. around a memory_search
        result (its path, from its startLine) when the snippet is not enough. Returns
        path, from, to (the last line read), total_lines and text. Only files the
        memory has indexed can be read: take the path from a memory_search result."""
        return self._call("memory_get", "read", path=path, lines=lines, **{"from": from_})

    @tool(read_only=False)
    def memory_recall(
        self,
        query: Annotated[str, Field(description="What to recall (may be empty).")] = "",
        kinds: Annotated[
            list[FactKind] | None,
            Field(description="W world, B experience, O opinion, S summary."),
        ] = None,
        entities: Annotated[
            list[str] | None, Field(description="Only facts about these entities.")
        ] = None,
        since: Annotated[
            str | None, Field(description="Only facts since: 7d, 2026-01-31, last week.")
        ] = None,
        depth: Annotated[int, Field(ge=0, le=3, description="Hops through shared entities.")] = 0,
        limit: Annotated[int, Field(ge=1, le=100, description="How many facts.")] = 10,
    ) -> dict[str, Any]:
        """Recall typed facts (world facts, experiences, opinions with confidence,
        summaries) about entities, a period or a question: use it for "what do we know
        about X", "what happened last week", "what did we decide". depth > 0 also
        follows entities the facts share, and each result says via which ones. Each
        result has its text, kind, entities, day, score and source (path#Lx-Ly)."""
        return self._call(
            "memory_recall", "recall", query=query, k=limit, since=since, kinds=kinds,
            entities=entities, depth=depth,
        )  # fmt: skip

    @tool(read_only=False)
    def memory_retain(
        self,
        content: Annotated[str, Field(description="The fact, in one sentence.")],
        type: Annotated[
            FactKind, Field(description="W world fact, B experience, O opinion, S summary.")
        ] = "W",
        entities: Annotated[
            list[str] | None, Field(description="What it is about (without @).")
        ] = None,
        salience: Annotated[
            float | None, Field(ge=0.0, le=1.0, description="How much it matters, 0..1.")
        ] = None,
        confidence: Annotated[
            float | None, Field(ge=0.0, le=1.0, description="For an opinion (O), 0..1.")
        ] = None,
    ) -> dict[str, Any]:
        """Remember a durable fact for later sessions: a decision, a preference, a
        lesson learned, a fact about a person or a system. It is written into today's
        daily note (## Retain) and indexed. Returns the fact's id and where it was
        written."""
        return self._call(
            "memory_retain", "retain", content=content, kind=type, entities=entities,
            salience=salience, confidence=confidence,
        )  # fmt: skip

    @tool(read_only=False)
    def memory_feedback(
        self,
        reward: Annotated[
            float, Field(ge=-1.0, le=1.0, description="+1 helped, -1 misled, between.")
        ],
        trace_id: TraceId = "",
        chat_id: ChatId = "",
        source: Annotated[RewardSource, Field(description="Who judged the outcome.")] = "self",
        used: Annotated[
            list[str] | None, Field(description="The ids of the results your answer used.")
        ] = None,
        cited: Annotated[
            list[str] | None,
            Field(description="What your answer cited: path#Lx-Ly, path#Lx, or a path read."),
        ] = None,
        request_id: Annotated[
            str, Field(description="Your id for this report: a retry with it counts once.")
        ] = "",
    ) -> dict[str, Any]:
        """Report how a memory_search turned out, so the memory learns which paths
        lead to what is needed: +1 when its results helped, -1 when they misled or
        missed, a value between for partial help. Name the search by trace_id (or
        chat_id). With a good outcome, pass what your answer cited (cited) or the ids
        it used (used): only those are credited, and citing nothing the search gave
        credits nothing. source: human when a person judged it, self for your own
        judgement. Give a request_id to make a retry safe: the same request_id returns
        the outcome already recorded. Returns what was learned."""
        return self._call(
            "memory_feedback", "learn", outcome=reward, trace_id=trace_id, chat_id=chat_id,
            source=source, used=used, cited=cited, request_id=request_id,
        )  # fmt: skip

    @tool(read_only=False)
    def memory_correct(
        self,
        content: Annotated[str, Field(description="The correct statement, as a rule.")],
        trace_id: TraceId = "",
        chat_id: ChatId = "",
        targets: Annotated[
            list[str] | None,
            Field(description="Ids of the wrong results (default: what the search fired)."),
        ] = None,
    ) -> dict[str, Any]:
        """Correct the memory when a memory_search returned wrong or outdated guidance:
        records a CORRECTION that is retrieved with, and vetoes, what it corrects in
        later searches. Name the search by trace_id (or chat_id). Returns the
        correction's node id and the edges it added."""
        return self._call(
            "memory_correct", "inject", node_type="CORRECTION", content=content, trace_id=trace_id,
            chat_id=chat_id, targets=targets,
        )  # fmt: skip

    @tool(read_only=True)
    def memory_why(
        self,
        node: Annotated[str, Field(description="A result id: its history.")] = "",
        source: Annotated[str, Field(description="An edge's source id.")] = "",
        target: Annotated[str, Field(description="An edge's target id.")] = "",
        limit: Annotated[int, Field(ge=1, le=200, description="Most events shown.")] = 20,
    ) -> dict[str, Any]:
        """Explain why the memory behaves as it does: the history of a node (give
        node: the events that created, changed and retrieved it) or of an edge (give
        source and target: each weight change with the outcome, search and query text
        that caused it)."""
        return self._call(
            "memory_why", "audit", node=node, source=source, target=target, limit=limit
        )

    @tool(read_only=True)
    def kg_get(
        self,
        subject: Annotated[str, Field(description="e.g. tool:render_video, person:priya.")],
        predicate: Annotated[str | None, Field(description="One attribute (default all).")] = None,
    ) -> dict[str, Any]:
        """Look up current facts (key-value) about a subject: settings, environment,
        owners, versions that must be exact. Returns each predicate's current value
        and when and from where it was set."""
        return self._call("kg_get", "kg", action="get", subject=subject, predicate=predicate)

    @tool(read_only=False)
    def kg_set(
        self,
        subject: Annotated[str, Field(description="e.g. tool:render_video, person:priya.")],
        predicate: Annotated[str, Field(description="The attribute, e.g. env, owner.")],
        value: Annotated[str, Field(description="Its current value (replaces the old).")],
        source: Annotated[str, Field(description="Where the value comes from.")] = "",
    ) -> dict[str, Any]:
        """Set a current fact (key-value) about a subject, replacing its previous value
        (which stays in the history): use it for exact values that must not be
        paraphrased, such as a setting, a path or an owner."""
        return self._call(
            "kg_set", "kg", action="set", subject=subject, predicate=predicate, value=value,
            source=source,
        )  # fmt: skip

    def each(self) -> list[tuple[str, Callable[..., dict[str, Any]]]]:
        """(name, callable) of every tool, in ``TOOL_NAMES`` order."""
        return [(name, _keyword_args(getattr(self, name))) for name in TOOL_NAMES]


def _keyword_args(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``fn`` called with the arguments' wire names: the SDK passes an argument by its
    alias, and ``from`` (memory_get) cannot name a Python parameter, so it is handed
    to ``from_``. The signature (and so the schema) stays ``fn``'s."""

    @functools.wraps(fn)
    def call(**kwargs: Any) -> dict[str, Any]:
        return fn(**{_PARAMS.get(k, k): v for k, v in kwargs.items()})

    return call


_PARAMS = {"from": "from_"}


TOOL_NAMES = tuple(name for name, fn in vars(Tools).items() if hasattr(fn, "read_only"))
"""The tools, in the order ``tools/list`` gives them (their order in ``Tools``)."""
READ_ONLY = frozenset(name for name in TOOL_NAMES if getattr(Tools, name).read_only)
"""Tools that record nothing (``memory_search`` and ``memory_recall`` record a trace)."""
