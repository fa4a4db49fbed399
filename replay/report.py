"""Canned analyses of a brain's history over the analytics store (``ocb report``).

Each analysis is one documented SQL query over the views (README, "History: SQL and
audit"); ``report`` runs them all and returns named tables. Days are UTC.
"""

from __future__ import annotations

from typing import Any

import msgspec

from replay.analytics import AnalyticsStore

ANALYSES: dict[str, tuple[str, str]] = {
    "queries_per_day": (
        "Queries per day, with the mean fired nodes, context characters and steps",
        """
        SELECT CAST(date_trunc('day', ts) AS DATE) AS day, count(*) AS queries,
               round(avg(fired), 2) AS mean_fired,
               round(avg(context_chars), 1) AS mean_context_chars,
               round(avg(steps), 2) AS mean_steps
        FROM traces GROUP BY day ORDER BY day
        """,
    ),
    "outcomes_by_source": (
        "Outcomes by reward source",
        """
        SELECT source, count(*) AS outcomes, round(avg(reward), 3) AS mean_reward,
               count(*) FILTER (WHERE reward > 0) AS positive,
               count(*) FILTER (WHERE reward < 0) AS negative
        FROM outcomes GROUP BY source ORDER BY outcomes DESC, source
        """,
    ),
    "edge_churn": (
        "Edges with the most weight changes (creation not counted)",
        """
        SELECT d.source, d.target, count(*) AS changes,
               round(sum(abs(coalesce(d.after, 0) - coalesce(d.before, 0))), 4) AS moved,
               round(any_value(e.weight), 4) AS weight, any_value(e.tier) AS tier
        FROM deltas d LEFT JOIN edges e USING (source, target)
        WHERE d.before IS NOT NULL AND d.target <> '<STOP>'
        GROUP BY d.source, d.target ORDER BY changes DESC, moved DESC, d.source, d.target
        LIMIT $top
        """,
    ),
    "tiers_per_day": (
        "Edges per tier at the end of each day (default tier thresholds)",
        """
        WITH last AS (
            -- arg_max_null: a removal's NULL is the edge's last state, not skipped
            SELECT source, target, CAST(date_trunc('day', ts) AS DATE) AS day,
                   tier(arg_max_null(after, seq * 1000000 + ord)) AS now
            FROM deltas WHERE target <> '<STOP>' GROUP BY ALL
        ), moves AS (
            SELECT day, now, lag(now) OVER (PARTITION BY source, target ORDER BY day) AS was
            FROM last
        ), counts AS (
            SELECT day, t, sum(n) AS n FROM (
                SELECT day, now AS t, 1 AS n FROM moves WHERE now IS NOT NULL
                UNION ALL
                SELECT day, was AS t, -1 AS n FROM moves WHERE was IS NOT NULL
            ) GROUP BY day, t
        ), running AS (
            SELECT day, t, sum(n) OVER (PARTITION BY t ORDER BY day) AS n FROM counts
        ), days AS (SELECT DISTINCT day FROM last), tiers AS (
            SELECT unnest(['reflex', 'habitual', 'dormant', 'inhibitory']) AS t
        ), grid AS (
            SELECT d.day, ti.t, (SELECT r.n FROM running r WHERE r.t = ti.t AND r.day <= d.day
                                 ORDER BY r.day DESC LIMIT 1) AS n
            FROM days d, tiers ti
        )
        SELECT day,
               coalesce(sum(n) FILTER (WHERE t = 'reflex'), 0)::BIGINT AS reflex,
               coalesce(sum(n) FILTER (WHERE t = 'habitual'), 0)::BIGINT AS habitual,
               coalesce(sum(n) FILTER (WHERE t = 'dormant'), 0)::BIGINT AS dormant,
               coalesce(sum(n) FILTER (WHERE t = 'inhibitory'), 0)::BIGINT AS inhibitory
        FROM grid GROUP BY day ORDER BY day
        """,
    ),
    "maintenance": (
        "Maintenance runs by operation",
        """
        SELECT op, count(*) AS runs, max(seq) AS last_seq FROM maintenance
        GROUP BY op ORDER BY op
        """,
    ),
}
"""Every canned analysis: name -> (title, SQL; ``$top`` limits the listed rows)."""


class Table(msgspec.Struct, frozen=True):
    """One analysis: its name, title, columns and rows."""

    name: str
    title: str
    columns: list[str]
    rows: list[tuple[Any, ...]]


class HistoryReport(msgspec.Struct, frozen=True):
    """Every canned analysis at ``seq`` (the store's last seq)."""

    seq: int
    tables: list[Table]


def report(store: AnalyticsStore, *, top: int = 10) -> HistoryReport:
    """Run every analysis of ``ANALYSES`` on a caught-up store."""
    tables = []
    for name, (title, sql) in ANALYSES.items():
        params = {"top": top} if "$top" in sql else None
        got = store.query(sql, params)
        tables.append(Table(name, title, got.columns, got.rows))
    return HistoryReport(store.last_seq, tables)
