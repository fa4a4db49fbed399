"""Stopping a brain's daemon and saying truly what happened.

``stop`` asks the daemon to shut down, then waits for its process to exit, not for its
socket to go (the socket goes first, while the process may still hold the brain's lock).
A daemon that has not exited after the grace period gets SIGTERM, which ends a daemon
that is already stopping at once (``ocb.daemon.run``: a second signal forces the stop),
and after a few more seconds SIGKILL. Either way every acknowledged write is already in
the log. A daemon that no longer answers on its socket but still holds the brain's
lock is found through the lock's pid, and stopped the same way.

NOTE: on the client path of ``ocb serve stop``: the standard library and the protocol
only.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from ocb.daemon.protocol import RpcError, call, connect
from ocb_events.errors import OcbError

__all__ = ["Stopped", "lock_holder", "stop"]

TERM_WAIT_S = 10.0
"""Seconds to wait for an answer to the request, and after SIGTERM before SIGKILL (at
most: a shorter grace period shortens both)."""


@dataclass(frozen=True)
class Stopped:
    """How a daemon stopped: ``how`` is ``asked`` (it exited on request), ``sigterm``
    or ``sigkill`` (it had to be forced), after ``waited_s`` seconds in all."""

    pid: int
    how: str
    waited_s: float
    answered: bool
    """Whether it answered the shutdown request (False: found by its lock)."""


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, exited but not yet reaped by its
    parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: kill(0) is all there is to go on
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def lock_holder(brain: Path) -> int | None:
    """The pid of a live ``ocb serve`` process that the brain's writer lock names
    (None: the lock names no such process)."""
    try:
        raw = (brain / "log" / "LOCK").read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    if not raw.isdigit() or not alive(int(raw)):
        return None
    pid = int(raw)
    argv = _cmdline(pid)
    if argv and "serve" not in argv:
        return None  # another ocb command writes the brain: not ours to stop
    return pid


def _ask_shutdown(brain: Path, wait_s: float) -> int | None:
    """The pid of the daemon that took the shutdown request (None: none answered)."""
    sock = connect(brain, timeout=wait_s)
    if sock is None:
        return None
    try:
        with sock:
            got = call(sock, "shutdown")
    except (RpcError, OSError):
        return None
    pid = got.get("pid") if isinstance(got, dict) else None
    return pid if isinstance(pid, int) else None


def _wait(pid: int, until: float) -> bool:
    while alive(pid):
        if time.monotonic() >= until:
            return False
        time.sleep(0.05)
    return True


def stop(brain: Path, *, grace_s: float = 30.0) -> Stopped:
    """Stop the daemon of ``brain`` and wait until its process has exited.

    Raises:
        OcbError: no daemon serves the brain, or its process outlived SIGKILL.
    """
    start = time.monotonic()
    step = min(TERM_WAIT_S, max(1.0, grace_s))
    pid = _ask_shutdown(brain, step)
    answered = pid is not None
    if pid is None:
        pid = lock_holder(brain)
    if pid is None:
        raise OcbError(
            f"no daemon serves {brain}", f"start one: ocb serve --brain {brain} --detach"
        )
    how = "asked"
    if not answered or not _wait(pid, start + grace_s):
        how = "sigterm"
        _signal(pid, signal.SIGTERM)
        if not _wait(pid, time.monotonic() + step):
            how = "sigkill"
            _signal(pid, signal.SIGKILL)
            if not _wait(pid, time.monotonic() + TERM_WAIT_S):
                raise OcbError(
                    f"daemon pid {pid} is still running after SIGKILL",
                    f"it may be stuck in the kernel (disk or NFS): see ps -o stat= -p {pid}",
                )
    return Stopped(pid, how, round(time.monotonic() - start, 1), answered)


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError as exc:
        raise OcbError(
            f"daemon pid {pid} belongs to another user: cannot send it {sig.name}",
            "stop it as that user",
        ) from exc
