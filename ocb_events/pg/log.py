"""PostgresLog: the event log in a PostgreSQL database, shared by brains on several
machines.

NOTE: the database assigns seqs: an append locks the log's head row in its own
transaction, checks ``expected_seq`` against it, writes its records and the new head
and commits, so appenders anywhere take turns and seqs are gap-free. An append is
acknowledged only once its transaction committed.

A handle knows the log up to an end (``last_seq``): the end at open, moved on by its
own appends, by a ``LogConflict`` (to the end the conflict found) and by ``refresh``.
Reads to "the end" stop there, so a brain never sees records it has not folded
(like a segment log reader, whose end is fixed at open). A daemon refreshes when the
log's channel notifies it (``ocb_events.pg.listen``).

A connection lost to a server restart is opened again by the next call; an append
that fails before its commit recorded nothing and says so; one whose commit got no
answer is looked up once the server answers again (its chain names it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal, TypeVar, overload

import msgspec

from ocb_events.clock import Clock, system_clock
from ocb_events.codec import decode_for_fold, decode_record, encode_record
from ocb_events.errors import LogConflict, LogCorrupt, LogError, LogUnavailable
from ocb_events.frames import ZERO_CHAIN, digest, link
from ocb_events.pg.conn import Target, connect, driver, reason_of
from ocb_events.pg.tables import create_tables, q
from ocb_events.schema import Event, FoldRecord, Record

__all__ = ["PAGE", "PostgresLog", "StoredRecord"]

PAGE = 2_000
"""Records fetched per round trip when reading."""

CHAINS_KEPT = 4096
"""Chain values a handle keeps once read (``chain_of``)."""

T = TypeVar("T")
_Decode = Callable[..., Record | FoldRecord]


class PostgresLog:
    """The event log in PostgreSQL (see the module docstring).

    Args:
        target: where the log lives (``Target.parse(url)``); a URL is parsed.
        clock: the source of record timestamps; ts never decreases (across every
            writer: a batch's ts is at least the log's last ts).
        durability: ``"batch"`` commits synchronously; ``"none"`` lets the server
            acknowledge before its WAL is flushed (``synchronous_commit = off``).
        create: create the log's tables when they are missing.

    Raises:
        LogUnavailable: the server cannot be reached or refuses the login, or (without
            ``create``) holds no log there.
    """

    def __init__(
        self,
        target: Target | str,
        *,
        clock: Clock = system_clock,
        durability: Literal["batch", "none"] = "batch",
        create: bool = True,
    ) -> None:
        self.target = target if isinstance(target, Target) else Target.parse(target)
        self._clock = clock
        self.durability = durability
        self._pg = driver()
        self._mutex = threading.RLock()
        self._conn: Any = None
        self._last_seq, self._last_ts, self._chain = 0, 0, ZERO_CHAIN
        self._chains: dict[int, bytes] = {}
        conn = self._connection()
        if create:
            self._run(lambda c: create_tables(c, self.target.schema))
        elif not self._exists(conn):
            self.close()
            raise LogUnavailable(
                self.target.safe,
                f"no log in schema {self.target.schema!r}",
                "check the URL's database and ?schema=, or create the log with ocb init --log",
            )
        self.refresh()

    def __repr__(self) -> str:
        return f"PostgresLog({self.target.safe!r})"

    @property
    def url(self) -> str:
        """The log's URL without its password."""
        return self.target.safe

    # ------------------------------------------------------------------ connection

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.target)
            if self.durability == "none":
                self._conn.execute("SET synchronous_commit = off")
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except self._pg.Error:
                pass

    def _run(self, work: Callable[[Any], T]) -> T:
        """``work(connection)``, again on a new connection when the held one was lost
        (a server restart): only for work that is safe to repeat.

        Raises:
            LogUnavailable: the server does not answer.
        """
        with self._mutex:
            fresh = self._conn is None or self._conn.closed
            for attempt in (1, 2):
                conn = self._connection()
                try:
                    return work(conn)
                except self._pg.OperationalError as exc:
                    self._drop()
                    if fresh or attempt == 2:
                        raise self._unavailable(exc) from None
                    fresh = True
            raise AssertionError("unreachable")

    def rows(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of one query (bytea as bytes), on a new connection when the held
        one was lost.

        Raises:
            LogUnavailable: the server does not answer.
        """
        got: list[Any] = self._run(lambda c: c.cursor(binary=True).execute(sql, params).fetchall())
        return got

    def _unavailable(self, exc: BaseException | None, hint: str = "") -> LogUnavailable:
        reason = reason_of(exc, self.target) if exc is not None else "connection lost"
        return LogUnavailable(self.target.safe, reason, hint)

    def _exists(self, conn: Any) -> bool:
        row = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (f'"{self.target.schema}".head',)
        ).fetchone()
        return bool(row[0])

    def refresh(self) -> int:
        """Move this handle's end to the log's end in the database; returns it.

        Raises:
            LogUnavailable: the server does not answer.
        """
        row = self._run(
            lambda c: c.execute(
                q(self.target.schema, "SELECT last_seq, last_ts, chain FROM {s}.head")
            ).fetchone()
        )
        with self._mutex:
            if row[0] >= self._last_seq:
                self._last_seq, self._last_ts, self._chain = row[0], row[1], bytes(row[2])
            return self._last_seq

    # ------------------------------------------------------------------ reading

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def last_ts(self) -> int:
        return self._last_ts

    @overload
    def read(
        self, from_seq: int = ..., to_seq: int | None = ..., *, light: Literal[False] = ...
    ) -> Iterator[Record]: ...

    @overload
    def read(
        self, from_seq: int = ..., to_seq: int | None = ..., *, light: Literal[True]
    ) -> Iterator[Record | FoldRecord]: ...

    def read(
        self, from_seq: int = 1, to_seq: int | None = None, *, light: bool = False
    ) -> Iterator[Record | FoldRecord]:
        """Records from ``from_seq`` to ``to_seq`` (default: this handle's end at the
        call), fetched a page at a time.

        Raises:
            LogUnavailable: the server does not answer.
            LogCorrupt: a record is missing or does not decode.
        """
        end = self._last_seq if to_seq is None else to_seq
        return self.read_decoded(from_seq, end, decode_for_fold if light else decode_record)

    def read_decoded(self, from_seq: int, to_seq: int, decode: Callable[..., Any]) -> Iterator[Any]:
        """``decode`` of each record ``from_seq..to_seq`` (``protocol.EncodedLog``)."""
        limit, from_seq = min(to_seq, self._last_seq), max(from_seq, 1)
        return iter(()) if from_seq > limit else self._read(from_seq, limit, decode)

    def _read(self, from_seq: int, limit: int, decode: _Decode) -> Iterator[Record | FoldRecord]:
        sql = q(
            self.target.schema,
            "SELECT seq, payload FROM {s}.records WHERE seq >= %s AND seq <= %s "
            "ORDER BY seq LIMIT %s",
        )
        where = f"{self.target.schema}.records"
        seq = from_seq
        while seq <= limit:
            rows = self.rows(sql, (seq, limit, PAGE))
            for got, payload in rows:
                if got != seq:
                    raise LogCorrupt(where, 0, seq, "record missing from the table")
                yield decode(payload, segment=where, offset=0)
                seq += 1
            if not rows:
                raise LogCorrupt(where, 0, seq, "record missing from the table")

    def _column(self, column: str, seq: int) -> Any:
        row = self._run(
            lambda c: c.execute(
                q(self.target.schema, f"SELECT {column} FROM {{s}}.records WHERE seq = %s"),
                (seq,),
            ).fetchone()
        )
        if row is None:
            raise LogCorrupt(f"{self.target.schema}.records", 0, seq, "record missing")
        return row[0]

    def _check_range(self, seq: int, low: int) -> None:
        if not low <= seq <= self._last_seq:
            raise LogError(f"no record {seq} (the log holds 1..{self._last_seq})")

    def ts_of(self, seq: int) -> int:
        self._check_range(seq, 1)
        return int(self._column("ts", seq))

    def chain_of(self, seq: int) -> bytes | None:
        """The chain at ``seq`` (kept once read: a record's chain never changes, so
        what a brain derived from a point of its history needs no server)."""
        self._check_range(seq, 0)
        if seq == 0:
            return ZERO_CHAIN
        if seq == self._last_seq:
            return self._chain
        got = self._chains.get(seq)
        if got is None:
            if len(self._chains) >= CHAINS_KEPT:
                self._chains.clear()
            got = self._chains[seq] = bytes(self._column("chain", seq))
        return got

    # ------------------------------------------------------------------ writing

    def append(
        self, events: Sequence[Event], *, actor: str, expected_seq: int | None = None
    ) -> list[Record]:
        """Append ``events`` as one transaction; seqs come from the log's head row.

        Raises:
            LogConflict: ``expected_seq`` is not the log's last seq (this handle's end
                moves to the one found, so a caller can catch up and decide again).
            LogUnavailable: the server did not answer (the message says whether the
                batch may have been recorded).
        """
        with self._mutex:
            fresh = self._conn is None or self._conn.closed
            try:
                return self._append(events, actor, expected_seq)
            except _Lost as lost:
                if lost.committing:
                    return self._settle(lost)
                if fresh:
                    raise self._unavailable(lost.cause, _NOTHING) from None
            # the held connection was lost (a server restart): nothing was written
            try:
                return self._append(events, actor, expected_seq)
            except _Lost as lost:
                if lost.committing:
                    return self._settle(lost)
                raise self._unavailable(lost.cause, _NOTHING) from None

    def _append(
        self, events: Sequence[Event], actor: str, expected_seq: int | None
    ) -> list[Record]:
        try:
            conn = self._connection()
        except LogUnavailable as exc:
            raise LogUnavailable(exc.url, exc.reason, _NOTHING) from None
        lost = _Lost()
        try:
            with conn.transaction():
                head = conn.execute(
                    q(
                        self.target.schema,
                        "SELECT last_seq, last_ts, chain FROM {s}.head FOR UPDATE",
                    )
                ).fetchone()
                last_seq, last_ts, chain = head[0], head[1], bytes(head[2])
                if expected_seq is not None and expected_seq != last_seq:
                    self._last_seq, self._last_ts, self._chain = last_seq, last_ts, chain
                    raise LogConflict(expected_seq, last_seq)
                if not events:
                    return []
                recs, rows, chain = _batch(
                    events, actor, last_seq, max(self._clock(), last_ts), chain
                )
                self._write(conn, rows, recs[-1], chain)
                lost.committing, lost.records, lost.chain = True, recs, chain
        except self._pg.OperationalError as exc:
            self._drop()
            lost.cause = exc
            raise lost from None
        self._last_seq, self._last_ts, self._chain = recs[-1].seq, recs[-1].ts, chain
        return recs

    def _write(
        self, conn: Any, rows: list[tuple[int, int, bytes, bytes]], last: Record, chain: bytes
    ) -> None:
        s = self.target.schema
        sql = "COPY {s}.records (seq, ts, chain, payload) FROM STDIN (FORMAT BINARY)"
        with conn.cursor().copy(q(s, sql)) as cp:
            cp.set_types(["int8", "int8", "bytea", "bytea"])
            for row in rows:
                cp.write_row(row)
        conn.execute(
            q(s, "UPDATE {s}.head SET last_seq = %s, last_ts = %s, chain = %s"),
            (last.seq, last.ts, chain),
        )
        conn.execute("SELECT pg_notify(%s, %s)", (self.target.channel, str(last.seq)))

    def _settle(self, lost: _Lost) -> list[Record]:
        """An append whose commit got no answer: recorded when the log, once it
        answers, holds its last record with its chain."""
        assert lost.records and lost.cause is not None
        last = lost.records[-1]
        try:
            row = self._run(
                lambda c: c.execute(
                    q(self.target.schema, "SELECT chain FROM {s}.records WHERE seq = %s"),
                    (last.seq,),
                ).fetchone()
            )
        except LogUnavailable:
            raise self._unavailable(
                lost.cause,
                "the server went away while committing: the batch may or may not be "
                "recorded; once the server is back the brain folds it if it was",
            ) from None
        if row is not None and bytes(row[0]) == lost.chain:
            self._last_seq, self._last_ts, self._chain = last.seq, last.ts, lost.chain
            return lost.records
        raise self._unavailable(lost.cause, _NOTHING)

    def group(self) -> AbstractContextManager[None]:
        """Each append commits on its own (a transaction is the unit of durability)."""
        return nullcontext()

    # ------------------------------------------------------------------ rewriting

    def redact(self, payloads: Mapping[int, bytes]) -> None:
        """Replace the payloads of records (by seq) with redacted records, keeping
        each one's original digest so the chain still verifies (``ocb forget``).

        Raises:
            LogError: a seq is out of range.
            LogUnavailable: the server does not answer (nothing changed).
        """
        bad = [s for s in payloads if not 1 <= s <= self._last_seq]
        if bad:
            raise LogError(f"no record {bad[0]} (the log holds 1..{self._last_seq})")
        sql = q(
            self.target.schema,
            "UPDATE {s}.records SET original = coalesce(original, sha256(payload)), "
            "payload = %s WHERE seq = %s",
        )

        def work(conn: Any) -> None:
            with conn.transaction():
                for seq in sorted(payloads):
                    conn.execute(sql, (payloads[seq], seq))

        self._run(work)

    def copy_in(self, rows: Iterable[StoredRecord]) -> int:
        """Fill an empty log with records stored elsewhere, as they are (seq, ts,
        chain and bytes kept: ``ocb log migrate``), in one transaction; returns the
        last seq.

        Raises:
            LogError: the log is not empty.
            LogCorrupt: a row's chain is not the one its content gives (nothing kept).
            LogUnavailable: the server does not answer (nothing kept).
        """
        s = self.target.schema
        with self._mutex:
            conn = self._connection()
            try:
                with conn.transaction():
                    head = conn.execute(q(s, "SELECT last_seq FROM {s}.head FOR UPDATE")).fetchone()
                    if head[0]:
                        raise LogError(
                            f"the log at {self.url} already holds {head[0]} records",
                            "copy into a new database or ?schema=",
                        )
                    last = self._copy_rows(conn, rows)
                    conn.execute(
                        q(s, "UPDATE {s}.head SET last_seq = %s, last_ts = %s, chain = %s"),
                        (last.seq, last.ts, last.chain),
                    )
            except self._pg.OperationalError as exc:
                self._drop()
                raise self._unavailable(exc, _NOTHING) from None
            self._last_seq, self._last_ts, self._chain = last.seq, last.ts, last.chain
            return last.seq

    def _copy_rows(self, conn: Any, rows: Iterable[StoredRecord]) -> StoredRecord:
        where = f"{self.target.schema}.records"
        last = StoredRecord(0, 0, ZERO_CHAIN, None, b"")
        sql = "COPY {s}.records (seq, ts, chain, original, payload) FROM STDIN (FORMAT BINARY)"
        with conn.cursor().copy(q(self.target.schema, sql)) as cp:
            cp.set_types(["int8", "int8", "bytea", "bytea", "bytea"])
            for row in rows:
                if row.seq != last.seq + 1:
                    raise LogCorrupt(where, 0, last.seq + 1, "record missing from the copy")
                if link_of(last.chain, row.seq, row.ts, row.payload, row.original) != row.chain:
                    raise LogCorrupt(where, 0, row.seq, "did not match its hash chain")
                cp.write_row((row.seq, row.ts, row.chain, row.original, row.payload))
                last = row
        return last

    def stored(self, from_seq: int = 1) -> Iterator[StoredRecord]:
        """The records as stored (``copy_in``'s rows), to this handle's end."""
        sql = q(
            self.target.schema,
            "SELECT seq, ts, chain, original, payload FROM {s}.records "
            "WHERE seq >= %s AND seq <= %s ORDER BY seq LIMIT %s",
        )
        seq, limit = from_seq, self._last_seq
        while seq <= limit:
            rows = self.rows(sql, (seq, limit, PAGE))
            if not rows:
                return
            for r in rows:
                yield StoredRecord(r[0], r[1], bytes(r[2]), _opt(r[3]), bytes(r[4]))
            seq = rows[-1][0] + 1

    # ------------------------------------------------------------------ blobs

    def put_blob(self, name: str, data: bytes) -> None:
        """Store a blob under its name (once)."""
        self._run(
            lambda c: c.execute(
                q(
                    self.target.schema,
                    "INSERT INTO {s}.blobs VALUES (%s, %s) ON CONFLICT DO NOTHING",
                ),
                (name, data),
            )
        )

    def get_blob(self, name: str) -> bytes | None:
        """The bytes of a blob (None: no such blob)."""
        row = self._run(
            lambda c: c.execute(
                q(self.target.schema, "SELECT data FROM {s}.blobs WHERE digest = %s"), (name,)
            ).fetchone()
        )
        return None if row is None else bytes(row[0])

    def blob_names(self) -> list[str]:
        """The names of every blob stored with the log, sorted."""
        sql = q(self.target.schema, "SELECT digest FROM {s}.blobs ORDER BY digest")
        return [str(r[0]) for r in self.rows(sql, ())]

    def close(self) -> None:
        with self._mutex:
            self._drop()

    def __enter__(self) -> PostgresLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StoredRecord(msgspec.Struct, frozen=True):
    """One record as a log stores it: its chain value, and for a redacted record the
    digest of the payload it replaced (``original``)."""

    seq: int
    ts: int
    chain: bytes
    original: bytes | None
    payload: bytes


def _opt(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


_NOTHING = "nothing was recorded; start the server (or fix the URL), then retry"


class _Lost(Exception):
    """An append whose connection failed (``committing``: during its commit)."""

    def __init__(self) -> None:
        super().__init__("connection lost")
        self.committing = False
        self.records: list[Record] = []
        self.chain = ZERO_CHAIN
        self.cause: BaseException | None = None


def _batch(
    events: Sequence[Event], actor: str, last_seq: int, ts: int, chain: bytes
) -> tuple[list[Record], list[tuple[int, int, bytes, bytes]], bytes]:
    """The records of one batch after ``last_seq``, their table rows and the chain
    after the last."""
    recs, rows = [], []
    for i, ev in enumerate(events):
        rec = Record(seq=last_seq + 1 + i, ts=ts, actor=actor, event=ev)  # type: ignore[arg-type]
        payload = encode_record(rec)
        chain = link(chain, rec.seq, ts, digest(payload))
        recs.append(rec)
        rows.append((rec.seq, ts, chain, payload))
    return recs, rows, chain


def link_of(prev: bytes, seq: int, ts: int, payload: bytes, original: bytes | None) -> bytes:
    """The chain value of a stored record (a redacted one links its original digest)."""
    return link(
        prev, seq, ts, original[: len(ZERO_CHAIN)] if original is not None else digest(payload)
    )
