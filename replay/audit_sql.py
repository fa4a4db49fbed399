"""The SQL of an edge audit: ``EDGE_AUDIT_SQL``, the documented query over the views,
and ``keyed_audit``, the same rows read by the edge's codes (``replay.audit`` runs it).

The keyed audit reads each change's cause from ``store.causes`` (no view): what
``EDGE_AUDIT_SQL``'s joins give for a cause seq, joined once when the changes naming it
are loaded (``CAUSES``), with the walk of the cause's trace (``path``, JSON). A cause
is kept once it and everything its joins read are in the store (a change naming a
later seq gets none, and its audit runs the joins themselves: ``keyed_audit(...,
cached=False)``).

An audit reads its changes first through ``outcome_audit``: the same changes, with only
the columns a change an outcome caused needs (the common case), its times as integers
and no NULL text, so that the rows cross to Python small and are read by place; the
causes of the few changes whose kind carries more than its type, actor and time are then
read by key (``causes_of``)."""

from __future__ import annotations

_SELECT = """
SELECT d.seq, d.ord, d.ts, d.before, d.after, d.delta, d.rule, d.event, d.cause_seq,
       e.type AS cause_type, e.actor AS cause_actor, e.ts AS cause_ts,
       o.reward, o.source AS reward_source, o.trace_seq, o.fired_ids,
       coalesce(t.trace_id, o.trace_id, l.trace_id) AS trace_id,
       coalesce(t.query, lt.query) AS query,
       coalesce(t.chat_id, o.chat_id) AS chat_id,
       m.op, m.params, m.summary,
       i.node_id AS injected, i.node_type, i.content,
       l.teacher, l.hop, l.node AS labelled_node,
       f.path AS file, f.action AS file_action, f.content_hash,
       r.target_seq AS retracted_seq, r.kind AS retracted_kind, r.reason AS retract_reason,
       r.node_id AS retracted_node, ro.reward AS retracted_reward,
       ro.source AS retracted_source, ro.trace_id AS retracted_trace
"""
_JOINS = """
LEFT JOIN events e ON e.seq = d.cause_seq
LEFT JOIN outcomes o ON o.seq = d.cause_seq
LEFT JOIN traces t ON t.seq = o.trace_seq
LEFT JOIN maintenance m ON m.seq = d.cause_seq
LEFT JOIN injections i ON i.seq = d.cause_seq
LEFT JOIN labels l ON l.seq = d.cause_seq
LEFT JOIN traces lt ON lt.trace_id = l.trace_id AND lt.seq < l.seq
LEFT JOIN files f ON f.seq = d.cause_seq
LEFT JOIN retractions r ON r.seq = d.cause_seq
LEFT JOIN outcomes ro ON ro.seq = r.target_seq
"""

EDGE_AUDIT_SQL = (
    _SELECT
    + "FROM deltas d"
    + _JOINS
    + "WHERE d.source = ? AND d.target = ?\nORDER BY d.seq, d.ord\n"
)
"""Every change of one edge (``?`` = source, target) with its cause, oldest first."""


_KEYED_JOINS = {
    # the changes' own causes narrow each scan; a label's trace and a retraction's
    # outcome are looked up for labels and retractions only, not for every change
    "LEFT JOIN events e ON e.seq = d.cause_seq\n": (
        "LEFT JOIN events e ON e.seq = d.cause_seq AND e.seq IN (SELECT cause_seq FROM d)\n"
    ),
    "LEFT JOIN traces lt ON lt.trace_id = l.trace_id AND lt.seq < l.seq\n": (
        "LEFT JOIN (SELECT l2.seq AS label_seq, lt.query FROM labels l2 JOIN traces lt "
        "ON lt.trace_id = l2.trace_id AND lt.seq < l2.seq) lt ON lt.label_seq = l.seq\n"
    ),
    "LEFT JOIN outcomes ro ON ro.seq = r.target_seq\n": (
        "LEFT JOIN (SELECT r2.seq AS retraction_seq, ro.* FROM retractions r2 JOIN outcomes ro "
        "ON ro.seq = r2.target_seq) ro ON ro.retraction_seq = r.seq\n"
    ),
}


_HEAD, _CAUSE = _SELECT.split("d.cause_seq,", 1)
_HEAD += "d.cause_seq"
_PATH = "LEFT JOIN store.paths p ON p.seq = o.trace_seq\n"


def causes_select(changes: str) -> str:
    """The rows of ``store.causes`` for the distinct ``cause_seq`` of ``changes`` (a
    table expression)."""
    return (
        f"SELECT d.cause_seq AS key,{_CAUSE.rstrip()},\n"
        "       to_json(p.path)::VARCHAR AS path\n"
        f"FROM (SELECT DISTINCT cause_seq FROM {changes}) d" + _JOINS + _PATH
    )


CAUSES = "INSERT INTO store.causes " + causes_select(
    "store.updates WHERE seq BETWEEN $from AND $to AND cause_seq <= $to "
    "AND cause_seq NOT IN (SELECT key FROM store.causes)"
)
"""The causes of the changes of seqs ``$from..$to`` that ``store.causes`` lacks (a
flush's, once they and the records they name are loaded), read from the changes'
heads (``store.updates``)."""


def _changes_of(source: int, target: int) -> str:
    """The edge's changes found by the codes of its source and target (``store.ids``;
    the row groups of ``store.deltas`` that cannot hold them are skipped), as ``d``."""
    return (
        "WITH d AS MATERIALIZED (SELECT s.seq, s.ord, u.ts, s.before, s.after, s.delta, "
        "r.name AS rule, u.cause_seq, e.name AS event FROM store.deltas s "
        "JOIN store.updates u ON u.seq = s.seq "
        "JOIN store.ids r ON r.id = u.rule JOIN store.ids e ON e.id = u.event "
        f"WHERE s.source = {int(source)} AND s.target = {int(target)})\n"
    )


OUTCOME_COLUMNS = (
    "seq", "ts_us", "before", "after", "rule", "event", "cause_seq", "cause_actor",
    "cause_ts_us", "reward", "reward_source", "trace_id", "trace_seq", "query", "chat_id",
    "path", "fired_ids", "cause_type", "other",
)  # fmt: skip
"""The columns of ``outcome_audit``, in order."""


def outcome_audit(source: int, target: int) -> str:
    """An edge's changes (``keyed_audit``'s rows, oldest first) with only what the audit
    reads of a change an outcome caused: times as microseconds since the epoch, text
    and lists never NULL, and ``other`` (the cause is not an outcome, or not in
    ``store.causes``: NULL; read such changes with ``keyed_audit``)."""
    return (
        _changes_of(source, target)
        + """SELECT d.seq, epoch_us(d.ts) AS ts_us, d.before, d.after, d.rule, d.event,
       d.cause_seq, coalesce(c.cause_actor, '') AS cause_actor,
       epoch_us(c.cause_ts) AS cause_ts_us, c.reward,
       coalesce(c.reward_source, '') AS reward_source, coalesce(c.trace_id, '') AS trace_id,
       c.trace_seq, coalesce(c.query, '') AS query, coalesce(c.chat_id, '') AS chat_id,
       c.path, coalesce(c.fired_ids, []::VARCHAR[]) AS fired_ids, c.cause_type,
       CASE WHEN c.cause_type = 'outcome_recorded' THEN false
            WHEN c.key IS NULL AND d.cause_seq IS NOT NULL THEN NULL ELSE true END AS other
FROM d LEFT JOIN store.causes c ON c.key = d.cause_seq
ORDER BY d.seq, d.ord
"""
    )


def causes_of(keys: list[int]) -> str:
    """The rows of ``store.causes`` of these cause seqs (``key`` first; a short list of
    constants skips the row groups that cannot hold them)."""
    return f"SELECT * FROM store.causes WHERE key IN ({', '.join(str(int(k)) for k in keys)})"


def keyed_audit(source: int, target: int, *, cached: bool = True) -> str:
    """``EDGE_AUDIT_SQL``, the same rows, read faster, and two columns more: ``path``
    (the walk of the cause's trace, JSON, or NULL) and ``uncached`` (the change's cause
    is not in ``store.causes``: run again with ``cached=False``). The edge's changes
    are found by the codes of its source and target (``store.ids``; the row groups of
    ``store.deltas`` that cannot hold them are skipped), then joined to their causes
    (``cached``: kept in ``store.causes``; else each cause narrowed to those
    changes)."""
    changes = _changes_of(source, target)
    if cached:
        return (
            changes
            + f"{_HEAD.rstrip()}, c.* EXCLUDE (key),\n"
            + "       c.key IS NULL AND d.cause_seq IS NOT NULL AS uncached\n"
            + "FROM d LEFT JOIN store.causes c ON c.key = d.cause_seq\n"
            + "ORDER BY d.seq, d.ord\n"
        )
    joins = _JOINS
    for old, new in _KEYED_JOINS.items():
        assert old in joins
        joins = joins.replace(old, new)
    return (
        changes
        + _SELECT.rstrip()
        + ",\n       to_json(p.path)::VARCHAR AS path, false AS uncached\n"
        + "FROM d"
        + joins
        + _PATH
        + "ORDER BY d.seq, d.ord\n"
    )


_CODES = (
    "SELECT (SELECT id FROM store.ids WHERE name = $1), (SELECT id FROM store.ids WHERE name = $2)"
)
EDGE_NOW = (
    _CODES + ", (SELECT {'w': weight, 'k': kind, 't': tier} FROM edges "
    "WHERE source = $1 AND target = $2)"
)
STOP_NOW = (
    _CODES + ", (SELECT {'w': stop, 'k': 'stop', 't': NULL::VARCHAR} FROM nodes WHERE id = $1)"
)
"""The codes of an edge's source and target (``store.ids``) and the edge now (a STOP
weight: the node's)."""
