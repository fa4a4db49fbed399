"""The JSON objects the daemon's methods answer with, the same objects the CLI prints
under ``--json`` (documented in README.md): one shape per result, shared by the CLI,
the daemon, the MCP server and the OpenClaw plugin.

Shapes of the typed memory:

- ``retain``: ``{id, source, created, path, bullet, confirmed}`` (``id`` is the fact's
  id; ``confirmed`` the claims it confirmed).
- ``recall``: ``{trace_id, query, date_phrase, results, context_chars, dropped}``; each
  result ``{id, source, text, score, kind, day, entities, parts: {match, salience,
  access}, via}``, with ``confidence`` (opinions, claims) and ``evidence`` only when
  set, ``speaker``, ``session`` and ``turn`` for a fact an assistant or a tool said, and
  ``claim: true`` for a claim nothing confirmed yet.
- ``reflect``: ``{"seq", "since_ns", "since", "priority": [fact ids], "changes":
  [{"path", "change", "subject", "before", "after", "supporting", "contradicting",
  "sources"}], "written": [paths]}``. ``seq`` is 0 when nothing changed.

Shapes of the current facts (keys in this order):

- ``kg set``: ``{subject, predicate, value, source, seq, time, changed, previous}``;
  ``changed`` is true when the value differs from ``previous`` (null for a new fact).
- ``kg get``: ``{subject, seq, now, stale_days, facts: [{predicate, value, source, seq,
  since, verified, age_days, stale, caveat, conflicts: [{value, source, time, seq}]}]}``;
  ``caveat`` is null unless ``stale``; times are ISO 8601 UTC.
- ``kg history``: ``{subject, seq, predicates: [{predicate, statements: [{value, source,
  time, seq}]}]}``, statements oldest first.

Rows over the history (``sql``, ``report``): JSON has no NaN or infinity, so a float
that is not finite is the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (what
JavaScript's ``Number()`` and Python's ``float()`` read back).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from ocb.settings import in_force, lookup, registry
from ocb.wire.encode import fields, plain
from ocb_events.codec import to_builtins

if TYPE_CHECKING:
    from ocb.graph.route import TrainReport
    from ocb.graph.teach import TeachReport
    from ocb.memory.kg import KgHistory, KgSetReport, KgView
    from ocb.memory.recall import RecallItem
    from ocb.memory.recall_service import RecallAnswer
    from ocb.memory.reflect import ReflectReport
    from ocb.memory.retain import RetainReport
    from ocb.reports import Answer, Hit, InjectReport, LearnReport, ReembedReport, SyncReport
    from ocb.upkeep.blobs import BlobReport
    from ocb.upkeep.health import Health
    from ocb.upkeep.maintain import AnchorReport, MaintenanceReport
    from ocb_events.schema import EdgeDelta, QueryTraced, Record
    from replay.audit import EdgeAudit, NodeAudit
    from replay.report import HistoryReport
    from replay.store_meta import QueryResult
    from replay.verify import Check

# --------------------------------------------------------------------------- graph


def deltas_json(deltas: list[EdgeDelta]) -> list[dict[str, Any]]:
    """``[{source, target, delta}]`` (an ``EdgeDelta`` is stored as an array)."""
    return [msgspec.structs.asdict(d) for d in deltas]


def hit_json(h: Hit) -> dict[str, Any]:
    """One result: ``{id, source, text, score, fired, kind}``, ``also`` (the sources
    of chunks merged into it) only when it has some, and ``claim: true`` for the lines
    of what an assistant said and nothing confirmed."""
    out: dict[str, Any] = {
        "id": h.id,
        "source": h.source,
        "text": h.text,
        "score": h.score,
        "fired": h.fired,
        "kind": h.kind,
    }
    if h.also:
        out["also"] = list(h.also)
    if h.claim:
        out["claim"] = True
    return out


def answer_json(a: Answer, *, walk: bool = False) -> dict[str, Any]:
    """The answer's fields with ``chat_id`` third (after ``trace_id`` and ``query``);
    with ``walk``, also ``walk_json`` of its trace."""
    d = msgspec.structs.asdict(a)
    d.pop("walk")
    d["results"] = [hit_json(h) for h in a.results]
    head = {"trace_id": d.pop("trace_id"), "query": d.pop("query"), "chat_id": d.pop("chat_id")}
    if walk:
        d["walk"] = walk_json(a.walk)
    return head | d


def walk_json(t: QueryTraced | None) -> dict[str, Any] | None:
    """How the query walked: ``{"seeds": [{node_id, score, lexical, vector}], "steps":
    [{hop, node, candidates: [{target, weight, logit, tier, uses}], stop_logit, chosen,
    followed}], "vetoed", "fired", "params"}`` as its trace holds them (None: no trace)."""
    if t is None:
        return None
    full = to_builtins(t)
    keys = ("seeds", "steps", "vetoed", "fired", "params")
    return {k: full[k] for k in keys if k in full}


def sync_json(r: SyncReport) -> dict[str, Any]:
    """The report's fields, with ``skipped`` and ``secrets`` as objects, not tuples."""
    d = fields(r)
    d["skipped"] = [{"path": p, "reason": why} for p, why in r.skipped]
    d["secrets"] = [
        {"path": p, "line": line, "end_line": end, "kind": kind} for p, line, end, kind in r.secrets
    ]
    return d


def learn_json(r: LearnReport) -> dict[str, Any]:
    d = fields(r)
    d["deltas"] = deltas_json(r.deltas)
    return d


def inject_json(r: InjectReport) -> dict[str, Any]:
    return fields(r)


# --------------------------------------------------------------------------- memory


def retain_json(r: RetainReport) -> dict[str, Any]:
    return {
        "id": r.fact_id,
        "source": r.source,
        "created": r.created,
        "path": r.path,
        "bullet": r.bullet,
        "confirmed": r.confirmed,
    }


def item_json(it: RecallItem) -> dict[str, Any]:
    """One result: the retrieval contract (id, source, text, score) and the fact's
    kind, day, entities, score parts, entity path and (opinions) confidence."""
    out: dict[str, Any] = {
        "id": it.id,
        "source": it.source,
        "text": it.text,
        "score": it.score,
        "kind": it.kind,
        "day": it.day,
        "entities": list(it.entities),
        "parts": {"match": it.match, "salience": it.salience, "access": it.access},
        "via": list(it.via),
    }
    if it.confidence is not None:
        out["confidence"] = it.confidence
    if it.evidence:
        out["evidence"] = list(it.evidence)
    if it.speaker != "user":
        out.update(speaker=it.speaker, session=it.session, turn=it.turn)
    if it.claim:
        out["claim"] = True
    return out


def recall_json(a: RecallAnswer) -> dict[str, Any]:
    return {
        "trace_id": a.trace_id,
        "query": a.query,
        "date_phrase": a.date_phrase,
        "results": [item_json(it) for it in a.results],
        "context_chars": a.context_chars,
        "dropped": a.dropped,
    }


def reflect_json(r: ReflectReport) -> dict[str, Any]:
    return fields(r)


# --------------------------------------------------------------------------- kg


def set_json(r: KgSetReport) -> dict[str, Any]:
    return fields(r)


def get_json(v: KgView) -> dict[str, Any]:
    return fields(v)


def history_json(h: KgHistory) -> dict[str, Any]:
    return fields(h)


# --------------------------------------------------------------------------- audit


def edge_json(a: EdgeAudit) -> dict[str, Any]:
    return fields(a)


def node_json(a: NodeAudit) -> dict[str, Any]:
    return fields(a)


# --------------------------------------------------------------------------- sql


_NOT_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def cell(v: Any) -> Any:
    """A value as JSON: times as ISO strings (a naive datetime is UTC and gets ``Z``),
    decimals as floats, a float that is not finite as ``"NaN"``, ``"Infinity"`` or
    ``"-Infinity"``, anything else JSON has no type for as its text."""
    if isinstance(v, datetime):
        return v.isoformat() + ("Z" if v.tzinfo is None else "")
    if isinstance(v, date | time):
        return v.isoformat()
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return _NOT_FINITE[str(v)]
    if isinstance(v, list | tuple):
        return [cell(x) for x in v]
    if isinstance(v, dict):
        return {str(k): cell(x) for k, x in v.items()}
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v).hex()
    if v is None or isinstance(v, str | int | float):
        return v
    return str(v)  # INTERVAL, UUID ...


def rows_json(columns: list[str], rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """One object per row, by column name."""
    return [dict(zip(columns, (cell(v) for v in row), strict=True)) for row in rows]


def result_json(r: QueryResult) -> list[dict[str, Any]]:
    return rows_json(r.columns, r.rows)


def report_json(r: HistoryReport) -> dict[str, Any]:
    """``{seq, tables: {name: [row objects]}}``."""
    return {"seq": r.seq, "tables": {t.name: rows_json(t.columns, t.rows) for t in r.tables}}


# --------------------------------------------------------------------------- settings


def settings_json(recorded: Mapping[str, Any], key: str | None = None) -> dict[str, Any]:
    """Every setting in force (or only ``key``) by ``section.name``, given the recorded
    values: ``{"settings", "recorded", "keys"}``.

    Raises:
        InputError: an unknown key (naming the close matches).
    """
    known = registry()
    keys = list(known) if key is None else [lookup(key).key]
    values = in_force(recorded)
    return {
        "settings": {k: values[k] for k in keys},
        "recorded": [k for k in keys if k in recorded],
        "keys": {k: known[k].about() for k in keys},
    }


# --------------------------------------------------------------------------- doctor


Doctored = tuple[list["Check"], "BlobReport | None"]
"""A doctor run, and the blob repair that ran first (None without ``--repair``)."""


def doctor_json(got: Doctored) -> dict[str, Any]:
    """``{repair: {named, regenerated, lost}}`` after ``--repair``, then ``{ok, checks}``."""
    checks, fixed = got
    out: dict[str, Any] = {}
    if fixed is not None:
        out["repair"] = {
            "named": fixed.named,
            "regenerated": fixed.regenerated,
            "lost": plain(fixed.lost),
        }
    out["ok"] = all(c.ok for c in checks)
    out["checks"] = plain(checks)
    return out


# --------------------------------------------------------------------------- upkeep


def maintenance_json(r: MaintenanceReport) -> dict[str, Any]:
    """``{dry_run, now_ns, events, ops}``: ``events`` (their sum) is no field of the run."""
    return {"dry_run": r.dry_run, "now_ns": r.now_ns, "events": r.events, "ops": plain(r.ops)}


def anchor_json(r: AnchorReport) -> dict[str, Any]:
    return fields(r)


def teach_json(r: TeachReport) -> dict[str, Any]:
    """``{labels, applied, relevance, deltas}`` (``first_seq`` is not part of it)."""
    return {
        "labels": r.labels,
        "applied": r.applied,
        "relevance": r.relevance,
        "deltas": deltas_json(r.deltas),
    }


def train_json(r: TrainReport) -> dict[str, Any]:
    return fields(r)


def health_json(got: tuple[Health, list[Record]]) -> dict[str, Any]:
    """The report's fields and ``applied_seqs``: the seqs of the proposals recorded."""
    report, recs = got
    return fields(report) | {"applied_seqs": [r.seq for r in recs]}


def reembed_json(r: ReembedReport) -> dict[str, Any]:
    return fields(r)
