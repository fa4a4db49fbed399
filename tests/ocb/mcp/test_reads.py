"""``memory_get`` through the real MCP SDK client, attached to a daemon and with
--no-daemon: a path is judged on the file it leads to, so a symlink to ``.env`` or
``.git/config``, a hard link to a file outside the workspace, a binary file, a link to a
FIFO and a path that escapes are each refused in one line (never their content, never
a blocked call), and the server goes on serving."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp.client.session import ClientSession

from tests.ocb.daemon.support import daemon, stop
from tests.ocb.mcp.support import ok, refused, run_mcp
from tests.workspace_sync.hostile import fifo, unblock

SECRET = "hunter2"
"""In every file that must not be read (no known key pattern: nothing redacts it)."""

REFUSED = {
    "notes/envlink.md": "symlink to .env, a file the brain does not index",
    "notes/gitlink.md": "symlink to .git/config, a file the brain does not index",
    "notes/hard.md": "it has 2 hard links (another name may lie outside the workspace)",
    "notes/binary.md": "binary file",
    "notes/pipe-link.md": "not a regular file (FIFO)",
    "notes/pipe.md": "not a regular file (FIFO)",
    "notes/../../outside/kept.md": "the path leaves the workspace",
    ".env": "the brain does not index this file",
}


def hostile(ws: Path, tmp_path: Path) -> list[Path]:
    """The entries of ``REFUSED`` in ``ws``; returns the FIFO."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.md").write_text(f"# kept {SECRET}-hard\n")
    (ws / ".env").write_text(f"API_TOKEN={SECRET}-env\n")
    (ws / ".git").mkdir(exist_ok=True)
    (ws / ".git" / "config").write_text(f'[remote "origin"]\n\turl = https://{SECRET}-git@x\n')
    (ws / "notes" / "envlink.md").symlink_to("../.env")
    (ws / "notes" / "gitlink.md").symlink_to("../.git/config")
    os.link(outside / "kept.md", ws / "notes" / "hard.md")
    (ws / "notes" / "binary.md").write_bytes(b"# Binary\x00\x01 " + SECRET.encode() + b"-bin\n")
    pipe = fifo(ws / "notes" / "pipe.md")
    (ws / "notes" / "pipe-link.md").symlink_to("pipe.md")
    return [pipe]


async def each_refused(s: ClientSession) -> None:
    for path, why in REFUSED.items():
        msg = await refused(s, "memory_get", {"path": path})
        first, hint = msg.split("\nhint: ")
        assert why in first and "\n" not in first and hint, (path, msg)
        assert SECRET not in msg, path
    got = await ok(s, "memory_get", {"path": "runbooks/rollback.md", "lines": 1})
    assert got["text"]  # still serving


def test_attached_to_a_daemon(built: Path, workspace: Path, tmp_path: Path) -> None:
    fifos = hostile(workspace, tmp_path)

    async def check(s: ClientSession) -> None:
        await each_refused(s)

    try:
        with daemon(built):
            run_mcp(built, tmp_path / "mcp.err", check=check)
    finally:
        unblock(fifos)  # a regression blocked on one: let it go


@pytest.mark.parametrize("synced", [False, True])
def test_in_process_with_no_daemon(
    built: Path, workspace: Path, tmp_path: Path, synced: bool
) -> None:
    """A regular note the brain has not indexed yet is refused too, and read once a
    sync indexed it."""
    fifos = hostile(workspace, tmp_path)
    (workspace / "notes" / "later.md").write_text("# Later\n\nwritten after the sync\n")
    if synced:
        with daemon(built) as proc:  # its reconcile syncs the workspace
            assert stop(proc) == 0

    async def check(s: ClientSession) -> None:
        await each_refused(s)
        if synced:
            got = await ok(s, "memory_get", {"path": "notes/later.md"})
            assert got["text"].endswith("written after the sync")
        else:
            msg = await refused(s, "memory_get", {"path": "notes/later.md"})
            assert "has not indexed this file" in msg

    try:
        run_mcp(built, tmp_path / "mcp.err", "--no-daemon", check=check)
    finally:
        unblock(fifos)
