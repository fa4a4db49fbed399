"""The pages' JSON: each function answers one endpoint of ``ocb.ui.app`` from a
``Source``, with the daemon's methods and ``ocb`` commands (their ``--json`` objects,
documented in docs/json.md) and a few SQL statements over the brain's history.

Every parameter a page sends is checked here (a bad one is ``InputError``: one line,
naming the fix); nothing here reads a file itself.
"""

from __future__ import annotations

from typing import Any

from ocb.daemon.protocol import RpcError
from ocb.ui.source import Source
from ocb_events.errors import InputError
from replay.timetravel import iso

__all__ = [
    "ask",
    "asof",
    "correct",
    "diff",
    "doctor",
    "file_at",
    "health",
    "history",
    "info",
    "learn",
    "memory",
    "moves",
    "retract",
    "whatif",
    "why",
]

KINDS: dict[str, tuple[str, ...]] = {
    "sync": ("workspace_attached", "file_indexed", "file_changed", "file_removed",
             "file_moved", "embedder_configured", "nodes_embedded", "edges_created"),
    "query": ("query_traced", "recall_traced"),
    "outcome": ("outcome_recorded", "edges_updated", "route_updated"),
    "correction": ("node_injected", "retracted", "teacher_labeled", "authority_set",
                   "edge_relevance_set"),
    "memory": ("facts_recorded", "kg_fact_set", "turn_warmed", "reflect_ran"),
    "maintenance": ("maintenance_ran", "nodes_merged", "node_split", "edges_removed",
                    "route_model_trained", "log_repaired", "content_forgotten",
                    "record_lost", "config_changed"),
}  # fmt: skip
"""The timeline's kinds of event (History): every event type in one of them."""

CURVE_POINTS = 400
"""At most this many points on a learning curve (traces averaged in runs of seq)."""

MAX_TEXT = 2000
"""The longest query or correction a page may send (characters)."""


def _text(value: object, what: str, *, required: bool = True) -> str:
    if value is not None and not isinstance(value, str):
        raise InputError(f"the {what} must be text, not {type(value).__name__}", f"send a {what}")
    text = (value or "").strip()
    if required and not text:
        raise InputError(f"no {what} given", f"type a {what}")
    if len(text) > MAX_TEXT:
        raise InputError(f"the {what} is {len(text)} characters long", f"keep it under {MAX_TEXT}")
    return text


def _int(value: str | int | None, what: str, *, low: int = 0, default: int | None = None) -> int:
    if value is None or value == "":
        if default is None:
            raise InputError(f"no {what} given", f"pass {what}=N")
        return default
    try:
        got = int(value)
    except (TypeError, ValueError):
        raise InputError(
            f"{what} must be a whole number, not {value!r}", f"pass {what}=N"
        ) from None
    if got < low:
        raise InputError(f"{what} must be at least {low}, not {got}", f"pass {what}={low} or more")
    return got


def _sql(src: Source, statement: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = src.call("sql", {"statement": statement, "params": params})
    return got


# --------------------------------------------------------------------------- pages


def info(src: Source) -> dict[str, Any]:
    """The window's header: which brain, served how, writes on or off, its last seq,
    the context budget in force."""
    got = src.call("config", {"key": "traversal.max_context_chars"})
    return {
        "brain": str(src.brain.resolve()),
        "mode": src.mode,
        "writes": src.writes,
        "last_seq": src.last_seq(),
        "budget": int(got["settings"]["traversal.max_context_chars"]),
    }


def ask(src: Source, q: str | None, top: str | None = None) -> dict[str, Any]:
    """A query answered with its walk (recorded only when writes are on, so that it
    can be scored), the context an agent would get with its budget, and the route it
    followed with the credits that built it."""
    text = _text(q, "question")
    n = _int(top, "top", low=1, default=5)
    answer = src.call(
        "query",
        {"text": text, "top": min(n, 50), "record": src.writes, "walk": True, "actor": "ui"},
    )
    credits: list[dict[str, Any]] = []
    if answer.get("route"):
        credits = _sql(
            src,
            "SELECT seq, ts, question, node, delta, cause_seq FROM route_credits "
            "WHERE route_id = ? ORDER BY seq DESC LIMIT 200",
            [str(answer["route"])],
        )
    budget = int(answer["walk"]["params"]["max_context_chars"])  # this query's own
    return {"answer": answer, "budget": budget, "credits": credits,
            "recorded": bool(answer.get("trace_id"))}  # fmt: skip


def history(src: Source) -> dict[str, Any]:
    """The timeline (events per day and kind), the learning curves (context size and
    fired chunks per question over the history, and for the most repeated questions
    repetition by repetition) and the outcomes by reward source."""
    cases = " ".join("WHEN list_contains(?, type) THEN ?" for _ in KINDS)
    days = _sql(
        src,
        f"SELECT CAST(ts AS DATE)::VARCHAR AS day, CASE {cases} ELSE 'other' END AS kind, "
        "count(*) AS n, min(seq) AS first_seq, max(seq) AS last_seq FROM events "
        "GROUP BY ALL ORDER BY day, kind",
        [x for kind, types in KINDS.items() for x in (list(types), kind)],
    )
    curve = _sql(
        src,
        "WITH t AS (SELECT seq, context_chars, fired, ntile("
        f"{CURVE_POINTS}) OVER (ORDER BY seq) AS b FROM traces) "
        "SELECT min(seq) AS seq, max(seq) AS last_seq, count(*) AS n, "
        "round(avg(context_chars), 1) AS context_chars, round(avg(fired), 2) AS fired "
        "FROM t GROUP BY b ORDER BY seq",
    )
    repeated = _sql(
        src,
        "WITH top AS (SELECT query FROM traces GROUP BY query HAVING count(*) > 1 "
        "ORDER BY count(*) DESC, query LIMIT 5), r AS (SELECT query, seq, context_chars, "
        "fired, row_number() OVER (PARTITION BY query ORDER BY seq) AS n FROM traces "
        "WHERE query IN (SELECT query FROM top)) SELECT * FROM r WHERE n <= 50 "
        "ORDER BY query, n",
    )
    outcomes = _sql(
        src,
        "SELECT source, count(*) AS n, round(avg(reward), 3) AS mean_reward, "
        "count(*) FILTER (WHERE reward > 0) AS positive, "
        "count(*) FILTER (WHERE reward < 0) AS negative FROM outcomes "
        "GROUP BY source ORDER BY n DESC, source",
    )
    return {"last_seq": src.last_seq(), "days": days, "curve": curve,
            "repeated": repeated, "outcomes": outcomes, "kinds": list(KINDS)}  # fmt: skip


def asof(src: Source, seq: str | None) -> dict[str, Any]:
    """The brain as it was at ``seq``: its size, tier shares and costs then."""
    at = _int(seq, "seq", low=1)
    got: dict[str, Any] = src.cli("health", "--as-of", str(at))
    return {"seq": at, "health": got}


def diff(src: Source, start: str | None, end: str | None) -> dict[str, Any]:
    """What changed between two seqs (``ocb diff``)."""
    a = _int(start, "from", low=0)
    args = ["diff", "--from", str(a), "--top", "30"]
    if end:
        args += ["--to", str(_int(end, "to", low=0))]
    got: dict[str, Any] = src.cli(*args)
    return got


def why(src: Source, node: str | None, source: str | None, target: str | None) -> dict[str, Any]:
    """A chunk's or an edge's life and every change of its weights with their causes
    (``ocb audit``)."""
    if node:
        return {"node": src.call("audit", {"node": _text(node, "node"), "limit": 50})}
    if source and target:
        edge = src.call("audit", {"source": _text(source, "source"),
                                  "target": _text(target, "target")})  # fmt: skip
        return {"edge": edge}
    raise InputError("name a chunk or an edge", "open /why?node=ID or /why?source=A&target=B")


def whatif(src: Source, rule: str | None) -> dict[str, Any]:
    """The learning replayed under another rule in a scratch brain (``ocb what-if``)."""
    name = _text(rule, "rule")
    if name not in ("pg", "heuristic"):
        raise InputError(f"unknown rule {name!r}", "use pg or heuristic")
    got: dict[str, Any] = src.cli("what-if", "--rule", name, "--queries", "20")
    return got


def memory(src: Source, q: str | None, entity: str | None) -> dict[str, Any]:
    """Typed facts by question or entity (opinions with their confidence), the subjects
    of current KG facts and an entity's current KG facts (with their staleness caveats)."""
    query = _text(q, "question", required=False)
    who = _text(entity, "entity", required=False)
    params: dict[str, Any] = {"query": query, "k": 50, "record": False}
    subjects: list[str] = src.call("kg", {"subject": "", "action": "subjects"})["subjects"]
    facts = None
    if who:
        params["entities"] = [who]
    try:
        facts = src.call("recall", params)
    except RpcError:  # an entity no fact mentions may still be a KG subject
        if not who or who not in subjects:
            raise
    kg = src.call("kg", {"subject": who}) if who and who in subjects else None
    return {"facts": facts, "kg": kg, "subjects": subjects, "entity": who, "query": query}


def moves(src: Source) -> dict[str, Any]:
    """The opinions' confidence moves that reflect recorded (the first ask reads the
    whole log: the page asks for them after its first render)."""
    out = []
    for r in src.scan(("reflect_ran",), keep=200):
        for change in r["event"].get("changes", []):
            if change.get("change") != "entity_summary":
                out.append({"seq": r["seq"], "ts": iso(int(r["ts"]))} | change)
    return {"moves": out[-200:]}


def health(src: Source) -> dict[str, Any]:
    """Tier shares and costs (brain-death signs among the findings), what serves the
    brain and when the workspace was last synced."""
    synced = _sql(
        src,
        "SELECT max(seq) AS seq, max(ts) AS ts FROM events WHERE list_contains(?, type)",
        [list(KINDS["sync"])],
    )
    return {"health": src.call("health", {}), "status": src.status(),
            "last_sync": synced[0] if synced else None}  # fmt: skip


def doctor(src: Source) -> dict[str, Any]:
    """The checks of ``ocb doctor``: the log verified, the projections against a full
    rebuild, vectors, blobs, privacy (seconds on a long log: the page asks for them)."""
    got: dict[str, Any] = src.call("doctor", {})
    return got


def file_at(src: Source, path: str | None, seq: str | None) -> dict[str, Any]:
    """A workspace file as the brain recorded it, now or at a seq (``ocb show``: only
    files of the brain's workspace)."""
    args = ["show", _text(path, "path")]
    if seq:
        args += ["--as-of", str(_int(seq, "seq", low=1))]
    got: dict[str, Any] = src.cli(*args)
    return got


# --------------------------------------------------------------------------- writes


def learn(src: Source, body: dict[str, Any]) -> dict[str, Any]:
    """Score a recorded answer (+1 or -1), marking the chunks it used."""
    trace = _text(body.get("trace_id"), "trace_id")
    outcome = body.get("outcome")
    if not isinstance(outcome, int | float) or isinstance(outcome, bool) or outcome not in (1, -1):
        raise InputError(f"outcome must be 1 or -1, not {outcome!r}", "send 1 or -1")
    used = body.get("used") or []
    if not isinstance(used, list) or not all(isinstance(u, str) for u in used):
        raise InputError("used must be a list of chunk ids", "send the ids of the chunks used")
    got: dict[str, Any] = src.call(
        "learn", {"outcome": float(outcome), "trace_id": trace, "used": used[:100],
                  "source": "human", "actor": "ui"},
    )  # fmt: skip
    return got


def correct(src: Source, body: dict[str, Any]) -> dict[str, Any]:
    """Correct a recorded answer: a CORRECTION node tied to what the answer fired."""
    trace = _text(body.get("trace_id"), "trace_id")
    content = _text(body.get("content"), "correction")
    got: dict[str, Any] = src.call(
        "inject", {"node_type": "CORRECTION", "content": content, "trace_id": trace,
                   "all_fired": True, "actor": "ui"},
    )  # fmt: skip
    return got


def retract(src: Source, body: dict[str, Any]) -> dict[str, Any]:
    """Take back the newest outcome of a trace (``ocb retract --trace``)."""
    trace = _text(body.get("trace_id"), "trace_id")
    reason = _text(body.get("reason"), "reason", required=False) or "retracted in ocb ui"
    got: dict[str, Any] = src.cli("retract", "--trace", trace, "--reason", reason)
    return got
