"""Waiting for new records of a log on PostgreSQL: LISTEN on the channel every
append notifies (``PostgresLog.append`` sends the new last seq when it commits)."""

from __future__ import annotations

from typing import Any

from ocb_events.errors import LogUnavailable
from ocb_events.pg.conn import Target, connect, driver, reason_of

__all__ = ["Listener"]


class Listener:
    """A connection that listens to one log's channel.

    Example:
        >>> with Listener(log.target) as listener:  # doctest: +SKIP
        ...     newest = listener.wait(1.0)  # a seq, or None after a second of quiet
    """

    def __init__(self, target: Target) -> None:
        self.target = target
        self._pg = driver()
        self._conn: Any = None

    def _listen(self) -> Any:
        if self._conn is None or self._conn.closed:
            conn = connect(self.target)
            conn.execute(f'LISTEN "{self.target.channel}"')
            self._conn = conn
        return self._conn

    def wait(self, timeout_s: float) -> int | None:
        """The newest seq notified within ``timeout_s`` (None: nothing came). After a
        lost connection it listens again and returns 0: records may have come
        meanwhile, so the caller refreshes.

        Raises:
            LogUnavailable: the server does not answer.
        """
        was_listening = self._conn is not None and not self._conn.closed
        try:
            conn = self._listen()
        except LogUnavailable:
            self.close()
            raise
        if not was_listening:
            return 0
        newest: int | None = None
        try:
            for note in conn.notifies(timeout=timeout_s, stop_after=1):
                newest = max(newest or 0, _seq_of(note.payload))
            # take what else is queued without waiting
            for note in conn.notifies(timeout=0):
                newest = max(newest or 0, _seq_of(note.payload))
        except self._pg.OperationalError as exc:
            self.close()
            raise LogUnavailable(self.target.safe, reason_of(exc, self.target)) from None
        return newest

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except self._pg.Error:
                pass

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _seq_of(payload: str) -> int:
    """The seq a notification names; 0 (look at the log) for a payload that names none:
    anyone who may connect can notify the channel, and a notification is only a hint."""
    try:
        return max(0, int(payload))
    except ValueError:
        return 0
