"""The daemon's parts on their own: the gate, the writer's group commit and re-decide,
per-thread streams, the client's argv handling and the run directory's checks."""

from __future__ import annotations

import os
import socket
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from ocb.cli.app import app
from ocb.daemon.client import PATH_OPTIONS, brain_of, split_no_daemon
from ocb.daemon.gate import Gate
from ocb.daemon.live import LiveBrain
from ocb.daemon.run import bind, private_run_dir
from ocb.daemon.streams import capture, install
from ocb.daemon.watcher import Follower
from ocb.daemon.writer import Writer
from ocb_events.errors import InputError, LogConflict
from ocb_events.log import SegmentLog
from ocb_events.schema import ConfigChanged
from tests.waiting import wait_for


def test_a_waiting_writer_goes_before_new_readers() -> None:
    gate = Gate()
    order: list[str] = []
    first_in = threading.Event()
    release = threading.Event()

    def reader(name: str, hold: bool) -> None:
        with gate.read():
            order.append(name)
            if hold:
                first_in.set()
                release.wait()

    def writer() -> None:
        with gate.write():
            order.append("w")

    r1 = threading.Thread(target=reader, args=("r1", True))
    r1.start()
    first_in.wait()
    w = threading.Thread(target=writer)
    w.start()
    while not gate._waiting:  # the writer is queued behind r1
        threading.Event().wait(0.001)
    r2 = threading.Thread(target=reader, args=("r2", False))
    r2.start()
    release.set()
    for t in (r1, w, r2):
        t.join()
    assert order == ["r1", "w", "r2"]


def _event(n: int) -> ConfigChanged:
    return ConfigChanged(key="traversal.max_hops", value=n)


def test_writes_queued_together_share_one_flush_and_stale_ones_are_decided_again(
    tmp_path: Path,
) -> None:
    log = SegmentLog(tmp_path / "log")
    gate = Gate()
    writer = Writer(log.group, gate, lambda exc: None)
    blocker = threading.Event()
    futures = [writer.submit(blocker.wait)]  # holds the thread while the rest queue
    tries: list[int] = []

    def stale_once() -> int:
        tries.append(log.last_seq)
        seen = log.last_seq - (1 if len(tries) == 1 else 0)  # first decision is stale
        return log.append([_event(99)], actor="t", expected_seq=seen)[0].seq

    for n in range(10):
        futures.append(
            writer.submit(lambda n=n: log.append([_event(n)], actor="t", expected_seq=log.last_seq))
        )
    futures.append(writer.submit(stale_once))
    futures.append(writer.submit(lambda: 1 / 0))
    writer.start()
    blocker.set()
    results = [f.exception() or f.result() for f in futures]
    writer.stop()
    assert writer.groups <= 2 and writer.jobs == len(futures)  # the first, then the rest
    assert isinstance(results[-1], ZeroDivisionError)
    assert tries == [10, 10] and results[-2] == 11
    assert log.last_seq == 11
    log.close()
    assert not isinstance(results[-2], LogConflict)


def test_each_thread_prints_into_its_own_buffers() -> None:
    install()
    seen: dict[int, str] = {}

    def run(n: int) -> None:
        with capture() as cap:
            for _ in range(50):
                print(f"line {n}")
                print(f"err {n}", file=__import__("sys").stderr)
        seen[n] = cap.out.getvalue()
        assert cap.err.getvalue() == f"err {n}\n" * 50

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {n: f"line {n}\n" * 50 for n in range(8)}


def test_the_client_knows_every_path_option_of_the_app() -> None:
    import typer.main

    found: set[str] = set()

    def walk(cmd: object) -> None:
        for p in getattr(cmd, "params", []):
            name = getattr(p.type, "name", "")
            if name == "path" or "Path" in type(p.type).__name__:
                found.update(o for o in p.opts if o.startswith("--"))
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    assert found == PATH_OPTIONS


@given(st.lists(st.sampled_from(["query", "x", "--brain", "b", "--no-daemon", "--", "--json"])))
def test_no_daemon_is_dropped_before_the_double_dash_only(argv: list[str]) -> None:
    got, local = split_no_daemon(argv, {})
    end = argv.index("--") if "--" in argv else len(argv)
    assert local == ("--no-daemon" in argv[:end])
    assert got == [a for a in argv[:end] if a != "--no-daemon"] + argv[end:]


def test_the_brain_comes_from_the_option_then_the_environment() -> None:
    assert brain_of(["query", "--brain", "b"], {"OCB_BRAIN": "e"}) == ("b", False)
    assert brain_of(["query", "--brain=b"], {}) == ("b", False)
    assert brain_of(["query", "--", "--brain", "b"], {"OCB_BRAIN": "e"}) == ("e", True)
    assert brain_of(["query"], {}) == (None, False)
    assert split_no_daemon(["query"], {"OCB_NO_DAEMON": "1"}) == (["query"], True)


def test_an_unsafe_run_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = private_run_dir(tmp_path)
    assert (run.stat().st_mode & 0o777) == 0o700
    os.chmod(run, 0o770)
    with pytest.raises(InputError, match="writable by its group"):
        private_run_dir(tmp_path)
    os.chmod(run, 0o700)
    me = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: me + 1)
    with pytest.raises(InputError, match="owned by uid"):
        private_run_dir(tmp_path)


def test_a_stale_socket_is_replaced_and_a_file_in_its_place_refused(tmp_path: Path) -> None:
    private_run_dir(tmp_path)
    path = tmp_path / "run" / "ocb.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens
    sock = bind(tmp_path)
    assert path.is_socket() and (path.stat().st_mode & 0o777) == 0o600
    sock.close()
    path.unlink()
    path.write_text("not a socket")
    with pytest.raises(InputError, match="not a socket"):
        bind(tmp_path)


def test_a_save_during_the_start_up_reconcile_is_synced_by_the_watcher(built: Path) -> None:
    """The watcher listens before the reconcile runs: a file saved just after the
    reconcile read the workspace is synced by the first batch, not missed."""
    brain = LiveBrain(built)
    ws = Path(brain.graph.workspace)
    late = ws / "notes" / "late.md"

    def submit(fn: Any) -> Future[Any]:
        done: Future[Any] = Future()
        done.set_result(fn())
        if not late.exists():  # the reconcile has read the workspace: save a file now
            late.write_text("# Late\n\nsaved while the brain reconciled.\n")
        return done

    follower = Follower(brain, ws, lambda _m: None, debounce_ms=50)
    try:
        follower.start(submit)
        assert follower.syncs >= 1
        wait_for(lambda: "notes/late.md" in brain.graph.files, "the late file to be synced")
    finally:
        follower.stop()
        brain.close()
