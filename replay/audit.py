"""Why an edge or a node is the way it is: every change, each with its cause chain,
read from the analytics store (``replay.analytics``).

An edge audit is the documented query ``EDGE_AUDIT_SQL`` (``deltas`` joined to the
record that caused each change: an outcome with its trace, a maintenance run, an
injection, a teacher label, a file sync, or a retraction with what it took back),
plus the path of each scored trace (``replay.audit_sql``). It runs as ``keyed_audit``:
the same rows, found without scanning the history (the edge's changes by their key,
each cause and its trace's path read from ``store.causes``, or joined for those changes
when the store does not keep it); the changes an outcome caused are read narrower, by
``outcome_audit`` (each time formatted once per second, each path decoded once). A node
audit lists its lifecycle (created from a file version, edited, moved, renamed, merged,
split, authority), injections, weight changes around it and its access history (every query
that fired it).

Both raise ``InputError`` for ids the history never held, suggesting close matches.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import msgspec

from ocb_events.errors import InputError, close_matches, unknown_with
from replay.analytics import AnalyticsStore
from replay.audit_sql import (
    EDGE_AUDIT_SQL as EDGE_AUDIT_SQL,
    EDGE_NOW,
    STOP_NOW,
    causes_of,
    keyed_audit,
    outcome_audit,
)
from replay.audit_types import (
    Access as Access,
    Cause as Cause,
    EdgeAudit as EdgeAudit,
    LifeEvent as LifeEvent,
    NodeAudit as NodeAudit,
    RouteChange as RouteChange,
    WeightChange as WeightChange,
)
from replay.store_meta import QueryResult
from replay.timetravel import iso


def _f(v: Any) -> float | None:
    return None if v is None else float(v)


def _ts(v: Any) -> str:
    """An ISO UTC time from DuckDB's (naive, UTC) timestamp."""
    if v is None:
        return ""
    if isinstance(v, datetime):
        if v.year >= 1000 and v.tzinfo is None:  # whole seconds, as ``iso`` gives them
            return v.isoformat(timespec="seconds") + "Z"
        return iso(int(v.replace(tzinfo=UTC).timestamp() * 1_000_000) * 1000)
    return str(v)


def _kind(rule: str, cause_type: str | None, own: bool) -> str:
    if cause_type == "outcome_recorded":
        return "outcome"
    if cause_type == "maintenance_ran":
        return "maintenance"
    if cause_type == "node_injected":
        return "injection"
    if cause_type == "teacher_labeled":
        return "teacher"
    if cause_type in ("file_indexed", "file_changed", "file_removed", "file_moved"):
        return "sync"
    if cause_type == "retracted":
        return "retraction"
    return "record" if own else (cause_type or rule)


_JSON_PATH = msgspec.json.Decoder(list[str])


def _path(store: AnalyticsStore, trace_seqs: set[int]) -> dict[int, list[str]]:
    """The trajectory of each trace: ``node -> chosen`` for each step, in order (kept
    per trace in ``store.paths`` as the steps are loaded)."""
    if not trace_seqs:
        return {}
    rows = store.query(
        "SELECT seq, path FROM store.paths WHERE seq IN (SELECT unnest(?))",
        [sorted(trace_seqs)],
    ).rows
    return {int(seq): list(path) for seq, path in rows}


def _suggest(store: AnalyticsStore, name: str, sql: str, params: list[Any]) -> list[str]:
    known = [str(r[0]) for r in store.query(sql, params).rows]
    return close_matches(name, known, cutoff=0.5)


def _unknown(what: str, name: str, close: list[str], hint: str) -> InputError:
    return unknown_with(what, name, close, hint, ": the history holds no such id")


_IDS = "SELECT DISTINCT id FROM (SELECT id FROM nodes UNION ALL SELECT node FROM lifecycle)"


def node_known(store: AnalyticsStore, node: str) -> bool:
    rows = store.query(
        "SELECT (SELECT count(*) FROM nodes WHERE id = $1) + "
        "(SELECT count(*) FROM lifecycle WHERE node = $1)",
        [node],
    ).rows
    return bool(rows[0][0])


def _check_node(store: AnalyticsStore, node: str, role: str = "node") -> None:
    if not node_known(store, node):
        close = _suggest(store, node, _IDS, [])
        raise _unknown(role, node, close, 'list node ids with: ocb sql "SELECT id FROM nodes"')


def audit_edge(store: AnalyticsStore, source: str, target: str) -> EdgeAudit:
    """Every change to the edge ``source -> target`` with its cause chain.

    Raises:
        InputError: a node the history never held, or no edge between the two
            (suggesting close ids or the source's targets).
    """
    now, changes = _changes(store, source, target)
    if not changes:
        _check_node(store, source, "source node")
        if target != "<STOP>":
            _check_node(store, target, "target node")
        close = _suggest(
            store,
            target,
            "SELECT DISTINCT target FROM deltas WHERE source = ?",
            [source],
        )
        raise _unknown(
            "edge",
            f"{source} -> {target}",
            [f"{source} -> {c}" for c in close],
            f"list its edges with: ocb sql \"SELECT * FROM edges WHERE source = '{source}'\"",
        )
    weight, kind, tier = (now["w"], now["k"], now["t"]) if now is not None else (None, "", None)
    return EdgeAudit(
        source=source,
        target=target,
        exists=now is not None,
        weight=_f(weight),
        kind=str(kind or ""),
        tier=str(tier or ""),
        as_of_seq=store.last_seq,
        changes=changes,
    )


_OUTCOME = (
    "seq", "ts", "before", "after", "rule", "event", "cause_seq", "cause_type", "cause_actor",
    "cause_ts", "reward", "reward_source", "trace_id", "trace_seq", "query", "chat_id",
    "fired_ids",
)  # fmt: skip
"""The columns a change caused by an outcome reads (the common case, read by place)."""


def _weight_changes(rows: QueryResult) -> list[WeightChange]:
    cols = rows.columns
    at = {c: i for i, c in enumerate(cols)}
    (i_seq, i_ts, i_before, i_after, i_rule, i_event, i_cseq, i_type, i_actor, i_cts,
     i_reward, i_source, i_tid, i_tseq, i_query, i_chat, i_fired) = map(at.__getitem__, _OUTCOME)  # noqa: E501  # fmt: skip
    i_path = at["path"]
    paths = {
        int(r[i_tseq]): _JSON_PATH.decode(r[i_path])
        for r in rows.rows
        if r[i_tseq] is not None and r[i_path] is not None
    }
    out = []
    for r in rows.rows:
        if r[i_type] == "outcome_recorded" and r[i_cseq] is not None:
            tseq = None if r[i_tseq] is None else int(r[i_tseq])
            cause = Cause(
                seq=int(r[i_cseq]),
                kind="outcome",
                type="outcome_recorded",
                actor=str(r[i_actor] or ""),
                ts=_ts(r[i_cts]),
                reward=_f(r[i_reward]),
                reward_source=str(r[i_source] or ""),
                trace_id=str(r[i_tid] or ""),
                trace_seq=tseq,
                query=str(r[i_query] or ""),
                chat_id=str(r[i_chat] or ""),
                path=paths.get(tseq, []) if tseq is not None else [],
                fired_ids=list(r[i_fired] or []),
            )
        else:
            cause = _cause(dict(zip(cols, r, strict=True)), paths)
        out.append(
            WeightChange(
                int(r[i_seq]),
                _ts(r[i_ts]),
                _f(r[i_before]),
                _f(r[i_after]),
                str(r[i_rule]),
                str(r[i_event]),
                cause,
            )
        )
    return out


def _changes(
    store: AnalyticsStore, source: str, target: str
) -> tuple[dict[str, Any] | None, list[WeightChange]]:
    """The edge now (``w``eight, ``k``ind, ``t``ier; None when it is not) and its
    changes (none when a name is not coded): read by ``outcome_audit``, those with
    another cause by ``keyed_audit``."""
    src, dst, now = store.query(
        STOP_NOW if target == "<STOP>" else EDGE_NOW, [source, target]
    ).rows[0]
    if src is None or dst is None:
        return now, []
    rows = store.query(outcome_audit(int(src), int(dst))).rows
    if any(r[-1] is None for r in rows):  # a change whose cause the store does not keep
        return now, _weight_changes(store.query(keyed_audit(int(src), int(dst), cached=False)))
    others = sorted(  # the causes whose kind carries more than its type, actor and time
        {r[6] for r in rows if r[-1] and _kind(r[4], r[-2], r[6] == r[0]) in _WIDE}
    )
    found = store.query(causes_of(others)) if others else QueryResult([], [], [])
    causes = {int(r[0]): dict(zip(found.columns, r, strict=True)) for r in found.rows}
    return now, _read_changes(rows, causes)


_WIDE = {"maintenance", "injection", "teacher", "sync", "retraction"}
"""The kinds of cause ``_cause`` reads more columns of ``store.causes`` for."""


def _read_changes(
    rows: list[tuple[Any, ...]], causes: dict[int, dict[str, Any]]
) -> list[WeightChange]:
    """The changes of ``outcome_audit``'s rows (each time and path read once), those
    with a cause of a kind in ``_WIDE`` read from ``causes`` (their rows of
    ``store.causes`` by key)."""
    stamps: dict[int, str] = {}  # by the second
    walks: dict[str | None, list[str]] = {None: []}
    out = []
    for seq, ts, before, after, rule, event, cseq, actor, cts, reward, source_, tid, tseq, \
            query, chat, path, fired, ctype, other in rows:  # fmt: skip
        ts_s = "" if ts is None else stamps.get(ts // 1_000_000) or _stamp(stamps, ts)
        cts_s = "" if cts is None else stamps.get(cts // 1_000_000) or _stamp(stamps, cts)
        if other:
            if (r := causes.get(cseq)) is not None:
                c = _cause(r | {"seq": seq, "rule": rule, "cause_seq": cseq}, {})
            else:  # the record itself, or one whose kind carries no more
                own = seq if cseq is None else cseq
                c = Cause(own, _kind(rule, ctype, own == seq), ctype or "", actor, cts_s)
            out.append(WeightChange(seq, ts_s, before, after, rule, event, c))
            continue
        walk = walks.get(path)
        if walk is None:
            walk = walks[path] = _JSON_PATH.decode(path)
        cause = Cause(
            cseq, "outcome", "outcome_recorded", actor, cts_s, reward, source_, tid, tseq,
            query, chat, list(walk) if tseq is not None else [], fired,
        )  # fmt: skip
        out.append(WeightChange(seq, ts_s, before, after, rule, event, cause))
    return out


def _stamp(stamps: dict[int, str], us: int) -> str:
    """``_ts`` of a time in microseconds since the epoch, kept in ``stamps`` by the second."""
    s = us // 1_000_000
    stamps[s] = _iso_s(s)
    return stamps[s]


def _iso_s(s: int) -> str:
    """``_ts`` of a time given as whole seconds since the epoch (UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s))


def _cause(r: dict[str, Any], paths: dict[int, list[str]]) -> Cause:
    seq = int(r["cause_seq"]) if r["cause_seq"] is not None else int(r["seq"])
    kind = _kind(str(r["rule"]), r["cause_type"], seq == int(r["seq"]))
    base: dict[str, Any] = {
        "seq": seq,
        "kind": kind,
        "type": str(r["cause_type"] or ""),
        "actor": str(r["cause_actor"] or ""),
        "ts": _ts(r["cause_ts"]),
    }
    if kind == "outcome":
        tseq = None if r["trace_seq"] is None else int(r["trace_seq"])
        base |= {
            "reward": _f(r["reward"]),
            "reward_source": str(r["reward_source"] or ""),
            "trace_id": str(r["trace_id"] or ""),
            "trace_seq": tseq,
            "query": str(r["query"] or ""),
            "chat_id": str(r["chat_id"] or ""),
            "path": paths.get(tseq, []) if tseq is not None else [],
            "fired_ids": list(r["fired_ids"] or []),
        }
    elif kind == "maintenance":
        params = json.loads(r["params"]) if r["params"] else {}
        base |= {"op": str(r["op"]), "params": params, "summary": str(r["summary"] or "")}
    elif kind == "injection":
        base |= {
            "node_id": str(r["injected"]),
            "node_type": str(r["node_type"] or ""),
            "content": str(r["content"] or ""),
        }
    elif kind == "teacher":
        base |= {
            "teacher": str(r["teacher"] or ""),
            "trace_id": str(r["trace_id"] or ""),
            "query": str(r["query"] or ""),
            "hop": None if r["hop"] is None else int(r["hop"]),
            "node_id": str(r["labelled_node"] or ""),
        }
    elif kind == "sync":
        base |= {
            "file": str(r["file"] or ""),
            "file_action": str(r["file_action"] or ""),
            "content_hash": str(r["content_hash"] or ""),
        }
    elif kind == "retraction":
        base |= {
            "target_seq": int(r["retracted_seq"]),
            "target_kind": str(r["retracted_kind"]),
            "reason": str(r["retract_reason"] or ""),
            "node_id": str(r["retracted_node"] or ""),
            "reward": _f(r["retracted_reward"]),
            "reward_source": str(r["retracted_source"] or ""),
            "trace_id": str(r["retracted_trace"] or ""),
        }
    return Cause(**base)


def audit_node(store: AnalyticsStore, node: str, *, limit: int = 20) -> NodeAudit:
    """A node's life, injections, weight changes around it and access history.

    Raises:
        InputError: an id the history never held (suggesting close ones), a bad limit.
    """
    if limit < 0:
        raise InputError(
            f"`limit` must be at least 0, got {limit}", "pass `limit=20`", param="limit"
        )
    _check_node(store, node)
    life = _life(store, node)
    out_in = store.query(
        "SELECT count(*) FILTER (WHERE source = $1), count(*) FILTER (WHERE target = $1) "
        "FROM deltas WHERE source = $1 OR target = $1",
        [node],
    ).rows[0]
    accesses, first, last, recent = _accesses(store, node, limit)
    return NodeAudit(
        id=node,
        **_head(store, node, life),
        life=life,
        injections=_injections(store, node),
        changes_out=int(out_in[0]),
        changes_in=int(out_in[1]),
        accesses=accesses,
        first_access=first,
        last_access=last,
        recent=recent,
        as_of_seq=store.last_seq,
        routes=_routes(store, node, limit),
    )


ROUTE_AUDIT_SQL = """
SELECT c.seq, c.ts, c.route_id, c.delta, c.cause_seq,
       (SELECT max(q.question) FROM route_credits q WHERE q.route_id = c.route_id) AS question,
       o.trace_id, o.source, o.reward, r.target_seq
FROM route_credits c
LEFT JOIN outcomes o ON o.seq = c.cause_seq
LEFT JOIN retractions r ON r.seq = c.cause_seq
WHERE c.node = ?
ORDER BY c.seq DESC, c.route_id
LIMIT ?
"""
"""The latest route credit changes of a node, each with its route's question (recorded
with the route's first change) and its cause."""


def _routes(store: AnalyticsStore, node: str, limit: int) -> list[RouteChange]:
    """The node's ``limit`` latest route credit changes, oldest first."""
    out = []
    for s, ts, rid, delta, cause, question, tid, source, reward, target in store.query(
        ROUTE_AUDIT_SQL, [node, limit]
    ).rows:
        kind = "retraction" if target is not None else "outcome"
        out.append(
            RouteChange(
                int(s),
                _ts(ts),
                str(rid),
                str(question or ""),
                float(delta),
                int(cause),
                kind,
                str(tid or ""),
                str(source or ""),
                _f(reward),
                None if target is None else int(target),
            )  # fmt: skip
        )
    return out[::-1]


def _life(store: AnalyticsStore, node: str) -> list[LifeEvent]:
    return [
        LifeEvent(
            int(s),
            _ts(ts),
            str(a),
            str(p or ""),
            int(lo or 0),
            int(hi or 0),
            str(h or ""),
            str(o or ""),
            str(d or ""),
        )  # fmt: skip
        for s, ts, a, p, lo, hi, h, o, d in store.query(
            "SELECT seq, ts, action, path, start_line, end_line, content_hash, other, detail "
            "FROM lifecycle WHERE node = ? ORDER BY seq",
            [node],
        ).rows
    ]


def _injections(store: AnalyticsStore, node: str) -> list[Cause]:
    return [
        Cause(
            seq=int(s),
            kind="injection",
            type="node_injected",
            ts=_ts(ts),
            node_id=node,
            node_type=str(t or ""),
            content=str(c or ""),
            chat_id=str(chat or ""),
            trace_id=str(tid or ""),
            query=str(q or ""),
        )
        for s, ts, t, c, chat, tid, q in store.query(
            "SELECT seq, ts, node_type, content, chat_id, trace_id, anchor_query "
            "FROM injections WHERE node_id = ? ORDER BY seq",
            [node],
        ).rows
    ]


def _accesses(store: AnalyticsStore, node: str, limit: int) -> tuple[int, str, str, list[Access]]:
    """How often the node fired, first and last, and its ``limit`` latest firings."""
    summary = store.query(
        "SELECT count(*), min(seq), max(seq) FROM fired WHERE node = ?", [node]
    ).rows[0]
    recent = [
        Access(
            int(s),
            _ts(ts),
            str(tid),
            str(q or ""),
            str(chat or ""),
            int(rank),
            str(route or ""),
            str(mode or ""),
        )  # fmt: skip
        for s, ts, tid, q, chat, rank, route, mode in store.query(
            "SELECT f.seq, t.ts, f.trace_id, t.query, t.chat_id, f.rank, t.route, t.route_mode "
            "FROM fired f JOIN traces t ON t.seq = f.seq WHERE f.node = ? "
            "ORDER BY f.seq DESC LIMIT ?",
            [node, limit],
        ).rows
    ]
    first, last = "", ""
    if summary[0]:
        stamps = store.query(
            "SELECT seq, ts FROM events WHERE seq IN (?, ?)", [summary[1], summary[2]]
        ).rows
        at = {int(s): _ts(t) for s, t in stamps}
        first, last = at.get(int(summary[1]), ""), at.get(int(summary[2]), "")
    return int(summary[0]), first, last, recent


def _head(store: AnalyticsStore, node: str, life: list[LifeEvent]) -> dict[str, Any]:
    """Where the node is now, or where it last was when it is gone."""
    now = store.query(
        "SELECT path, start_line, end_line, kind, authority, created_seq, alias_of, stop "
        "FROM nodes WHERE id = ?",
        [node],
    ).rows
    if now:
        path, lo, hi, kind, auth, created, alias, stop = now[0]
        head: dict[str, Any] = {
            "exists": True,
            "path": str(path or ""),
            "start_line": int(lo or 0),
            "end_line": int(hi or 0),
            "kind": str(kind or ""),
            "authority": str(auth or ""),
            "created_seq": None if created is None else int(created),
            "alias_of": str(alias or ""),
            "stop": _f(stop),
        }
    else:
        where = life[-1] if life else None
        head = {
            "exists": False,
            "path": where.path if where else "",
            "start_line": where.start_line if where else 0,
            "end_line": where.end_line if where else 0,
            "kind": "",
            "authority": "",
            "created_seq": None,
            "alias_of": "",
            "stop": None,
        }
    return head
