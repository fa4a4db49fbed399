"""The tables of a log on PostgreSQL, in the schema its URL names.

NOTE: the columns here are the storage format of a shared log; change them only with
a new ``FORMAT``.

    head     one row: last_seq, last_ts and chain of the newest record, and the
             format; an append locks it (``FOR UPDATE``), so appenders take turns and
             seqs stay gap-free
    records  seq (primary key), ts, chain, original (the digest a redacted record
             replaced, else NULL), payload (``ocb_events.codec.encode_record``),
             stored uncompressed (``STORAGE EXTERNAL``): a rebuild reads twice as
             fast as from pglz-compressed payloads, for twice the bytes
    blobs    digest (sha256 hex, primary key), data

The chain of a record is the segment log's (``ocb_events.frames.link``): a record has
the same chain value in both logs, so a migrated log is checked by its chains.
"""

from __future__ import annotations

from typing import Any

from ocb_events.frames import ZERO_CHAIN

__all__ = ["FORMAT", "create_tables", "q"]

FORMAT = 1


def q(schema: str, sql: str) -> str:
    """``sql`` with ``{s}`` naming the log's schema (checked to be a plain name by
    ``Target.parse``, so it is safe to put in the text)."""
    return sql.replace("{s}", f'"{schema}"')


_DDL = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.head (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    format integer NOT NULL,
    last_seq bigint NOT NULL,
    last_ts bigint NOT NULL,
    chain bytea NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.records (
    seq bigint PRIMARY KEY,
    ts bigint NOT NULL,
    chain bytea NOT NULL,
    original bytea,
    payload bytea NOT NULL
);
ALTER TABLE {s}.records ALTER COLUMN payload SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS {s}.blobs (
    digest text PRIMARY KEY,
    data bytea NOT NULL
);
"""


def create_tables(conn: Any, schema: str) -> None:
    """Create the log's tables unless they exist (several first openers at once take
    turns on an advisory lock)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"ocb-log-{schema}",))
        conn.execute(q(schema, _DDL))
        conn.execute(
            q(schema, "INSERT INTO {s}.head VALUES (true, %s, 0, 0, %s) ON CONFLICT DO NOTHING"),
            (FORMAT, ZERO_CHAIN),
        )
