"""Hostile workspace files against real processes: a FIFO, a ``.md`` symlink to one and
a socket never hang ``ocb init``, a daemon's start (its reconcile) nor its watcher,
each is skipped with its reason, and later changes are still synced; a file over
``indexing.max_file_bytes`` is skipped with a warning."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ocb.brain import Brain
from ocb.daemon.protocol import RpcError
from tests.ocb.daemon.support import daemon, ocb, rpc, stop, wait_for
from tests.workspace_sync.hostile import fifo, unblock, unix_socket


def hostile(ws: Path) -> list[Path]:
    """A FIFO ``notes/pipe.md``, a ``.md`` symlink to it, a socket ``notes/sock.md``;
    returns the FIFOs (to free a process blocked on one)."""
    pipe = fifo(ws / "notes" / "pipe.md")
    (ws / "notes" / "pipe-link.md").symlink_to("pipe.md")
    fifo(ws / "notes" / "pipe.fifo")
    (ws / "notes" / "other-link.md").symlink_to("pipe.fifo")
    unix_socket(ws / "notes" / "sock.md")
    return [pipe, ws / "notes" / "pipe.fifo"]


SKIPS = (
    "skipped notes/pipe.md: not a regular file (FIFO)",
    "skipped notes/pipe-link.md: not a regular file (FIFO)",
    "skipped notes/other-link.md: symlink to notes/pipe.fifo, a file the brain does not index",
    "skipped notes/sock.md: not a regular file (socket)",
)


def daemon_log(brain: Path) -> str:
    return (brain / "run" / "daemon.log").read_text()


def finds(brain: Path, text: str, path: str) -> bool:
    """Whether a recorded query (a write) answers ``text`` with a chunk of ``path``."""
    got = rpc(brain, "query", text=text)
    return any(h["source"].startswith(path + "#") for h in got["results"])


def test_ocb_init_skips_fifos_and_sockets_and_says_why(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "a.md").write_text("# Alpha\n\nThe alpha note.\n")
    fifos = hostile(ws)
    try:
        got = ocb("init", "--brain", str(tmp_path / "brain"), "--workspace", str(ws))
    except subprocess.TimeoutExpired:
        unblock(fifos)
        pytest.fail("ocb init blocked on a FIFO")
    assert got.returncode == 0, got.stderr
    for line in SKIPS:
        assert f"warning: {line}\n" in got.stderr
    with Brain(tmp_path / "brain", writer=False) as b:
        assert sorted(b.graph.files) == ["notes/a.md"]


def test_a_daemon_starts_over_a_workspace_holding_a_fifo(built: Path) -> None:
    """The daemon's reconcile reads the whole workspace before it serves."""
    ws = Path(Brain(built, writer=False).graph.workspace)
    fifos = hostile(ws)
    try:
        with daemon(built) as proc:
            assert rpc(built, "query", text="how do I roll back a bad deploy")["results"]
            for line in SKIPS:
                assert line in daemon_log(built)
            assert stop(proc) == 0
    finally:
        unblock(fifos)  # a regression blocked on one: let it go


def test_the_watcher_skips_fifos_and_sockets_made_while_it_runs(built: Path) -> None:
    """A later note is still synced and queries (writes: they record a trace) are
    answered."""
    ws = Path(Brain(built, writer=False).graph.workspace)
    fifos: list[Path] = []
    try:
        with daemon(built) as proc:
            fifos += hostile(ws)
            wait_for(lambda: SKIPS[-1] in daemon_log(built), "the watcher to see them")
            (ws / "notes" / "after.md").write_text("# After\n\nThe zebra crossing moved.\n")
            wait_for(lambda: finds(built, "zebra crossing", "notes/after.md"), "the later note")
            for line in SKIPS:
                assert line in daemon_log(built)
            assert stop(proc) == 0
    finally:
        unblock(fifos)  # a regression blocked on one: let it go


def read(brain: Path, path: str) -> dict[str, Any]:
    got: dict[str, Any] = rpc(brain, "read", path=path)
    return got


def limit(brain: Path, max_bytes: int) -> None:
    got = ocb("config", "--brain", str(brain), "indexing.max_file_bytes", str(max_bytes))
    assert got.returncode == 0, got.stderr


def test_a_file_over_the_size_limit_is_skipped_with_a_warning(built: Path) -> None:
    limit(built, 20_000)
    ws = Path(Brain(built, writer=False).graph.workspace)
    with daemon(built) as proc:
        (ws / "notes" / "big.md").write_text("# Big\n\n" + "The walrus log. " * 2000)
        (ws / "notes" / "small.md").write_text("# Small\n\nThe heron note.\n")
        wait_for(lambda: finds(built, "heron note", "notes/small.md"), "the small note")
        assert (
            "warning: skipped notes/big.md: larger than the size limit (32.0 kB > 20.0 kB, "
            "indexing.max_file_bytes)\n" in daemon_log(built)
        )
        assert not finds(built, "walrus log", "notes/big.md")
        with pytest.raises(RpcError, match="larger than the size limit"):
            read(built, "notes/big.md")
        assert read(built, "notes/small.md")["text"].endswith("The heron note.")
        assert stop(proc) == 0
    assert (
        ocb("config", "--brain", str(built), "indexing.max_file_bytes", "1000000").returncode == 0
    )
    with daemon(built) as proc:  # raised: the reconcile indexes it
        wait_for(lambda: finds(built, "walrus log", "notes/big.md"), "the big note")
        assert stop(proc) == 0
