"""Where the window's calls go: the daemon serving the brain when one answers (so the
pages show the live brain), or the daemon's methods run in this process (``Local``).

Either way a call is one of the daemon's methods (``ocb.daemon.methods``) or an ``ocb``
command run by its ``cli`` method with ``--json``; a source that does not allow writes
refuses every call that would record (checked here, whatever the pages ask).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from ocb.daemon.live import LiveBrain
from ocb.daemon.methods import App, methods
from ocb.daemon.protocol import (
    METHOD_NOT_FOUND,
    PROTOCOL,
    USER_ERROR,
    RpcError,
    call,
    connect,
)
from ocb.daemon.server import rpc_error, rss_bytes
from ocb_events.codec import record_to_json
from ocb_events.errors import InputError, OcbError
from ocb_events.log import SegmentLog

__all__ = ["Refused", "Source", "open_source"]

READS = frozenset({"events", "audit", "read", "sql", "doctor"})
"""Methods that never record."""

Mode = Literal["daemon", "in-process"]


class Refused(OcbError):
    """A call the window does not make in its mode (a write without ``--allow-writes``)."""


class Source:
    """The brain behind the window: ``call`` a method, run an ``ocb`` command (``cli``),
    read the last seq and the status of what serves it.

    Args:
        brain: the brain directory.
        writes: whether calls may record (``ocb ui --allow-writes``).
        mode: ``daemon`` (calls go over its socket) or ``in-process``.
        app: the ``ocb`` command line, which says which commands record.
        local: the brain opened in this process (``in-process`` only).
    """

    def __init__(
        self,
        brain: Path,
        *,
        writes: bool,
        mode: Mode,
        app: App,
        local: _Local | None = None,
    ) -> None:
        self.brain = brain
        self.writes = writes
        self.mode: Mode = mode
        self._local = local
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._busy = 0
        self._idle = threading.Condition()
        self._scanning = threading.Lock()
        self._scanned: dict[tuple[str, ...], tuple[int, list[dict[str, Any]]]] = {}
        self._app = app

    # ------------------------------------------------------------ calls

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """The method's result (``RpcError`` as the daemon answers it).

        Raises:
            Refused: it would record and writes are off.
        """
        self._check(method, params)
        with self._running():
            return self._call(method, params)

    def cli(self, *argv: str) -> Any:
        """``ocb <argv> --brain B --json`` as the daemon runs it, its JSON parsed.

        Raises:
            Refused: the command records and writes are off.
            RpcError: it failed (its first line of error, the hint after it).
        """
        full = [*argv, "--brain", str(self.brain), "--json"]
        if not self.writes and self._app.kind(full) not in ("read", "history"):
            raise Refused(f"ocb {argv[0]} records", "start the window with --allow-writes")
        with self._running():
            got = self._call("cli", {"argv": full, "protocol": PROTOCOL})
        if got["exit"] != 0:
            lines = [ln for ln in str(got["stderr"]).splitlines() if ln.strip()]
            first = lines[0].removeprefix("error: ") if lines else f"ocb {argv[0]} failed"
            hint = lines[1].strip().removeprefix("hint: ") if len(lines) > 1 else ""
            raise RpcError(USER_ERROR, first, hint)
        return json.loads(got["stdout"])

    def scan(self, types: tuple[str, ...], keep: int = 1000) -> list[dict[str, Any]]:
        """The last ``keep`` records of ``types`` in the whole log, as JSON objects. The
        log is read once, then from where the last scan ended; in this process by a
        reader of its own, so that a long read holds no other call up."""
        with self._scanning:
            since, found = self._scanned.get(types, (0, []))
            last = self.last_seq()
            if last > since:
                with self._running():
                    found = (found + self._records(types, since, last))[-keep:]
                self._scanned[types] = (last, found)
            return list(found)

    def _records(self, types: tuple[str, ...], since: int, last: int) -> list[dict[str, Any]]:
        if self._local is None:
            out: list[dict[str, Any]] = []
            while since < last:
                got = self._daemon("events", {"types": list(types), "since": since})
                if not got:
                    break
                out += [r for r in got if r["seq"] <= last]
                since = int(got[-1]["seq"])
            return out
        with LiveBrain(self.brain, writer=False) as b:
            return [
                json.loads(record_to_json(r))
                for r in b.events(since=since, types=types)
                if r.seq <= last
            ]

    @contextmanager
    def _running(self) -> Iterator[None]:
        with self._idle:
            self._busy += 1
        try:
            yield
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    def settle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the calls under way; whether none is left."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)

    def _check(self, method: str, params: dict[str, Any]) -> None:
        if self.writes or method in READS:
            return
        if method in ("query", "recall") and params.get("record") is False:
            return
        if method == "kg" and params.get("action", "get") != "set":
            return
        if method == "health" and not params.get("apply"):
            return
        if method == "config" and params.get("value") is None:
            return
        raise Refused(f"{method} records", "start the window with --allow-writes")

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        if self._local is not None:
            with self._lock:  # no writer thread here: one call at a time
                self._local.follow()
                found = self._local.table.get(method)
                if found is None:
                    raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r}")
                try:
                    return found.fn(params)
                except Exception as exc:
                    raise rpc_error(method, exc) from exc
        return self._daemon(method, params)

    def _daemon(self, method: str, params: dict[str, Any] | None = None) -> Any:
        sock = connect(self.brain, timeout=60.0)
        if sock is None:
            raise RpcError(
                USER_ERROR,
                f"the daemon of {self.brain} stopped",
                f"start it again (ocb serve --brain {self.brain} --detach) and reload",
            )
        with sock:
            return call(sock, method, params)

    # ------------------------------------------------------------ state

    def warm(self) -> None:
        """Load every projection, the search index and the analytics store before the
        first page needs them (as a daemon does when it starts); a failure is left for
        the page that needs them to report."""
        if self._local is None:
            return
        with self._running(), self._lock:
            try:
                self._local.live.warm()
                self._local.live.sql("SELECT 1")
            except Exception:  # reported by the call that needs it
                return

    def last_seq(self) -> int:
        """The log's last seq as what serves the brain sees it (in this process, a
        reader follows what other processes append)."""
        if self._local is not None:
            return self._local.last_seq()
        return int(self._daemon("hello")["seq"])

    def status(self) -> dict[str, Any]:
        """What serves the brain: the daemon's status (uptime, clients, requests,
        memory ...) or this process's."""
        if self.mode == "daemon":
            got: dict[str, Any] = self._daemon("status")
            return {"mode": "daemon"} | got
        return {
            "mode": "in-process",
            "pid": os.getpid(),
            "brain": str(self.brain.resolve()),
            "uptime_s": round(time.monotonic() - self._started, 1),
            "seq": self.last_seq(),
            "rss_bytes": rss_bytes(),
        }


class _Local:
    """The brain opened in this process and the daemon's methods over it. A reader
    (a read-only window) follows what other processes append: it opens the brain again
    when the log on disk has grown (looked at once a second at most), or folds a shared
    log's new records."""

    LOOK_S = 1.0

    def __init__(self, brain: Path, writes: bool, app: App) -> None:
        self.brain, self.writes, self.app = brain, writes, app
        self.live = LiveBrain(brain, writer=writes)
        self.table = methods(self.live, app)
        self._looked = -self.LOOK_S
        self._on_disk = self.live.log.last_seq

    def last_seq(self) -> int:
        if self.writes:
            return self.live.log.last_seq
        now = time.monotonic()
        if now - self._looked >= self.LOOK_S:
            self._looked = now
            log = self.live.log
            if isinstance(log, SegmentLog):
                with SegmentLog(log.directory, writer=False) as seen:
                    self._on_disk = seen.last_seq
            else:
                self._on_disk = max(self._on_disk, self.live.log.last_seq)
        return max(self._on_disk, self.live.log.last_seq)

    def follow(self) -> None:
        """Catch up with what other processes appended (a reader only)."""
        if self.writes:
            return
        if not isinstance(self.live.log, SegmentLog):
            self.live.store.catch_up()
            return
        if self.last_seq() > self.live.log.last_seq:
            self.live.close(snapshot=False)
            self.live = LiveBrain(self.brain, writer=False)
            self.table = methods(self.live, self.app)

    def close(self) -> None:
        self.live.close()


@contextmanager
def open_source(brain: Path, *, writes: bool, app: App) -> Iterator[Source]:
    """The source of ``brain``: its daemon when one answers, else the brain opened in
    this process (as its writer only with ``writes``: a read-only window leaves the
    brain to the other ``ocb`` commands, and follows what they record).

    Raises:
        BrainNotFound: there is no brain at ``brain``.
        BrainLocked: writes are on and another process writes the brain.
        InputError: its daemon speaks another protocol.
    """
    sock = connect(brain, timeout=5.0)
    if sock is not None:
        with sock:
            hello = call(sock, "hello")
        if hello.get("protocol") != PROTOCOL:
            raise InputError(
                f"the daemon of {brain} speaks protocol {hello.get('protocol')}, "
                f"this ocb {PROTOCOL}",
                f"restart it with this ocb: ocb serve stop --brain {brain}",
            )
        yield Source(brain, writes=writes, mode="daemon", app=app)
        return
    local = _Local(brain, writes, app)
    try:
        source = Source(brain, writes=writes, mode="in-process", app=app, local=local)
        warming = threading.Thread(target=source.warm, name="ocb-ui-warm")
        warming.start()
        try:
            yield source
        finally:
            warming.join()
    finally:
        local.close()
