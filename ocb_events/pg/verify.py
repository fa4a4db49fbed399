"""Verification of a log on PostgreSQL: every record, in seq order, against the hash
chain and the decoder (what ``ocb verify`` does for segments)."""

from __future__ import annotations

from typing import Any

import msgspec

from ocb_events.codec import decode_record
from ocb_events.errors import LogCorrupt, LogTruncated, OcbError
from ocb_events.frames import ZERO_CHAIN
from ocb_events.pg.log import PAGE, PostgresLog, link_of
from ocb_events.pg.tables import q

__all__ = ["TableReport", "verify_postgres"]


class TableReport(msgspec.Struct, frozen=True):
    """What a verification found: records checked, the last seq and its chain."""

    records: int
    last_seq: int
    chain: bytes


def verify_postgres(log: PostgresLog) -> TableReport:
    """Walk every record of the log: seqs gap-free from 1, ts never decreasing, each
    stored chain equal to the one its content gives, each payload a record with the
    seq and ts of its row, and the head naming the last record.

    Raises:
        LogCorrupt: naming the first damaged seq and why.
        LogTruncated: the head names records the table does not hold.
        LogUnavailable: the server does not answer.
    """
    where = f"{log.target.schema}.records"
    sql = q(
        log.target.schema,
        "SELECT seq, ts, chain, original, payload FROM {s}.records WHERE seq >= %s "
        "ORDER BY seq LIMIT %s",
    )
    head = log._run(
        lambda c: c.execute(q(log.target.schema, "SELECT last_seq, chain FROM {s}.head")).fetchone()
    )
    chain, expected, last_ts = ZERO_CHAIN, 1, 0
    while True:
        rows = log.rows(sql, (expected, PAGE))
        for seq, ts, stored, original, payload in rows:
            if seq != expected:
                raise LogCorrupt(where, 0, expected, f"record missing (next is seq {seq})")
            if ts < last_ts:
                raise LogCorrupt(where, 0, seq, "ts goes backwards")
            chain = link_of(chain, seq, ts, bytes(payload), _opt(original))
            if bytes(stored) != chain:
                raise LogCorrupt(where, 0, seq, "did not match its hash chain")
            _check_payload(bytes(payload), seq, ts, where)
            expected, last_ts = seq + 1, ts
        if len(rows) < PAGE:
            break
    last = expected - 1
    if head[0] > last:
        raise LogTruncated(last, head[0], "the log's head row names them")
    if head[0] != last or bytes(head[1]) != chain:
        raise LogCorrupt(where, 0, last, "the head row does not name the last record")
    return TableReport(last, last, chain)


def _opt(original: Any) -> bytes | None:
    return None if original is None else bytes(original)


def _check_payload(payload: bytes, seq: int, ts: int, where: str) -> None:
    try:
        rec = decode_record(payload, segment=where, offset=0)
    except OcbError as exc:
        raise LogCorrupt(where, 0, seq, f"undecodable record: {exc.message}") from None
    if (rec.seq, rec.ts) != (seq, ts):
        raise LogCorrupt(where, 0, seq, f"payload names seq {rec.seq} at ts {rec.ts}")
