"""Following a shared log: a daemon whose brain keeps its log in PostgreSQL listens
on the log's channel and folds what other brains append, within a second.

Each notification (or a second of quiet after a lost connection) queues a catch-up on
the writer thread, so it never runs beside one of this daemon's own appends: the
log's end moves to the database's and the new records are folded under the gate. A
server that goes away is retried every second; reads go on from what is folded.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, cast

from ocb.daemon.live import LiveBrain
from ocb_events.errors import LogUnavailable

if TYPE_CHECKING:  # loaded only for a brain on a shared log
    from ocb_events.pg.log import PostgresLog

__all__ = ["LogTail"]

Submit = Callable[[Callable[[], Any]], Future[Any]]
QUIET_S = 1.0


class LogTail:
    """The listening thread of a served brain on a shared log (nothing otherwise)."""

    def __init__(self, brain: LiveBrain, say: Callable[[str], None]) -> None:
        self.brain = brain
        self.say = say
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.caught_up = 0
        """Catch-ups that folded records another brain appended."""
        self.down = False
        """Whether the log's server stopped answering the listener (until it is back)."""

    def start(self, submit: Submit) -> None:
        log = self.brain.log
        pg = sys.modules.get("ocb_events.pg.log")  # loaded by any PostgresLog
        if pg is None or not isinstance(log, pg.PostgresLog):
            return
        self._thread = threading.Thread(
            target=self._run, args=(log, submit), name="ocb-log-tail", daemon=True
        )
        self._thread.start()

    def _run(self, log: PostgresLog, submit: Submit) -> None:
        from ocb_events.pg.listen import Listener

        with Listener(log.target) as listener:
            while not self._stop.is_set():
                try:
                    got = listener.wait(QUIET_S)
                except LogUnavailable as exc:
                    if not self.down:
                        self.say(
                            f"warning: {exc.message}; reads go on, writes fail until it is back"
                        )
                    self.down = True
                    self._stop.wait(QUIET_S)
                    continue
                if self.down:
                    self.say(f"the log at {log.url} answers again")
                    self.down = False
                if got == 0 or (got is not None and got > log.last_seq):
                    submit(self._catch_up)

    def info(self) -> dict[str, Any]:
        """The log's part of ``status``: where the log is (a shared log's URL, never
        its password), whether its server answers, and the catch-ups of other brains'
        records folded here."""
        if self._thread is None:
            return {"log": "local"}
        url = cast("PostgresLog", self.brain.log).url
        return {"log": url, "log_reachable": not self.down, "log_catch_ups": self.caught_up}

    def _catch_up(self) -> int:
        folded = self.brain.store.catch_up()
        if folded:
            self.caught_up += 1
        return folded

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
