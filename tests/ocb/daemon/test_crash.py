"""SIGKILL in the middle of client writes loses no acknowledged write; the restart
repairs the tail, replaces the stale socket and serves again; a second daemon on the
same brain is refused with the holder's pid."""

from __future__ import annotations

import signal
import threading
from contextlib import ExitStack
from pathlib import Path

from ocb.brain import Brain
from ocb.daemon.protocol import RpcError, call, connect
from tests.ocb.daemon.support import daemon, ocb, start, stop, wait_for


def _writer(brain: Path, acked: list[str], stop_at: threading.Event) -> None:
    while not stop_at.is_set():
        sock = connect(brain, timeout=30.0)
        if sock is None:
            return
        try:
            with sock, ExitStack() as stack:
                reader = stack.enter_context(sock.makefile("rb"))
                while not stop_at.is_set():
                    ans = call(
                        sock, "query", {"text": "roll back a deploy", "top": 2}, reader=reader
                    )
                    acked.append(ans["trace_id"])
        except (RpcError, OSError):
            return


def test_sigkill_loses_no_acknowledged_write(built: Path) -> None:
    proc = start(built)
    acked: list[str] = []
    done = threading.Event()
    threads = [threading.Thread(target=_writer, args=(built, acked, done)) for _ in range(4)]
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= 40, "40 acknowledged writes")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done.set()
    for t in threads:
        t.join()
    assert (built / "run" / "ocb.sock").exists()  # left behind by the killed daemon
    seen = list(acked)
    proc = start(built)  # repairs a torn tail, replaces the stale socket
    try:
        with Brain(built, writer=False) as b:
            traces = set(b.state("traces").by_id)
        assert set(seen) <= traces
    finally:
        assert stop(proc) == 0


def test_a_second_daemon_is_refused_with_the_holders_pid(built: Path) -> None:
    with daemon(built) as proc:
        again = ocb("serve", "--brain", str(built))
        assert again.returncode == 1
        assert f"served by its daemon (pid {proc.pid})" in again.stderr
        assert "Traceback" not in again.stderr
        assert stop(proc) == 0
