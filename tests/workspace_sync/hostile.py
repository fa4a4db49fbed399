"""Hostile workspace entries for the scan and read tests: FIFOs, sockets, devices,
links out and to files the brain does not index, hard links, binary and oversized
files; and running a read that a FIFO could block on a thread with a deadline, freeing
it when it blocks so a regression fails instead of hanging the suite."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_KINDS = (
    "text",
    "binary",
    "latin",
    "fifo",
    "socket",
    "hard link",
    "link to text",
    "link to fifo",
    "link to socket",
    "link to .env",
    "link to .git/config",
    "link to build",
    "link to other suffix",
    "link out",
    "link to /dev/zero",
    "broken link",
    "directory",
    "big",
)
"""The kinds of entry ``make`` builds under a ``.md`` name (``KINDS`` adds a device
where this process may make one)."""

READ = frozenset({"text", "link to text"})
"""The kinds a scan reads; every other one is skipped with ``REASONS[kind]``."""

REASONS = {
    "binary": "binary file",
    "latin": "not UTF-8",
    "fifo": "not a regular file (FIFO)",
    "socket": "not a regular file (socket)",
    "device": "not a regular file (character device)",
    "hard link": "hard links (another name may lie outside the workspace)",
    "link to fifo": "not a regular file (FIFO)",
    "link to socket": "not a regular file (socket)",
    "link to .env": "symlink to .env, a file the brain does not index",
    "link to .git/config": "symlink to .git/config, a file the brain does not index",
    "link to build": "symlink to build/out.md, a file the brain does not index",
    "link to other suffix": "symlink to notes.py, a file the brain does not index",
    "link out": "symlink points outside the workspace",
    "link to /dev/zero": "symlink points outside the workspace",
    "broken link": "broken symlink",
    "directory": "not a regular file (directory)",
    "big": "larger than the size limit",
}
"""A part of the reason each kind is skipped with (a scan lists no directory named
``x.md``: it is walked; a read names it)."""

BIG = 4096
"""The size limit the tests read with; a ``big`` entry is one byte over it."""


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def unix_socket(path: Path) -> Path:
    """A socket file at ``path`` (bound, then closed: the file stays)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(os.fspath(path))
    finally:
        s.close()
    return path


def outside_files(root: Path) -> None:
    """What the entries of ``make`` lead to, inside ``root``: ``.env``,
    ``.git/config``, a build output, a file of another suffix, ``target.md`` (text),
    ``pipe.md`` (a FIFO), ``sock.md`` (a socket), ``shared.md`` (the file hard links
    share); and a secret outside it. Every secret holds ``hunter2``."""
    (root / ".git").mkdir(parents=True, exist_ok=True)
    (root / ".env").write_text("API_TOKEN=hunter2-env\n")
    (root / ".git" / "config").write_text("[remote]\n\turl = https://hunter2-git@x\n")
    (root / "build").mkdir(exist_ok=True)
    (root / "build" / "out.md").write_text("# built hunter2-build\n")
    (root / "notes.py").write_text("SECRET = 'hunter2-py'\n")
    (root / "target.md").write_text("# Target\n\nplain text\n")
    (root / "shared.md").write_text("shared hunter2-hard\n")
    fifo(root / "pipe.md")
    unix_socket(root / "sock.md")
    (root.parent / "outside.md").write_text("# hunter2-outside\n")


def make(root: Path, name: str, kind: str) -> None:
    """An entry of ``kind`` at ``root / name`` (``outside_files`` made first)."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    links = {
        "link to text": root / "target.md",
        "link to fifo": root / "pipe.md",
        "link to socket": root / "sock.md",
        "link to .env": root / ".env",
        "link to .git/config": root / ".git" / "config",
        "link to build": root / "build" / "out.md",
        "link to other suffix": root / "notes.py",
        "link out": root.parent / "outside.md",
        "link to /dev/zero": Path("/dev/zero"),
        "broken link": root / "gone.md",
    }
    if kind in links:
        path.symlink_to(os.path.relpath(links[kind], path.parent))
    elif kind == "text":
        path.write_text(f"# {name}\n\nsome words about {name}\n")
    elif kind == "binary":
        path.write_bytes(b"# looks like text\x00\x01\x02 hunter2-binary\n")
    elif kind == "latin":
        path.write_bytes("caf\xe9 hunter2-latin\n".encode("latin-1"))
    elif kind == "fifo":
        fifo(path)
    elif kind == "socket":
        unix_socket(path)
    elif kind == "device":
        _device(path)
    elif kind == "hard link":
        os.link(root / "shared.md", path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "big":
        path.write_text("x" * BIG + "\n")
    else:
        raise ValueError(kind)


def _device(path: Path) -> None:
    """A character device: the null device."""
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))


def _can_make_devices() -> bool:
    with tempfile.TemporaryDirectory() as d:
        try:
            _device(Path(d) / "null")
        except OSError:
            return False
        return True


def unblock(fifos: Sequence[Path]) -> None:
    """Open each FIFO for writing and close it: a reader blocked on it gets EOF."""
    for f in fifos:
        try:
            os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader waits on this one


def finishes(fn: Callable[[], T], fifos: Sequence[Path], deadline: float = 30.0) -> T:
    """``fn()``, run on a thread; when it has not returned by ``deadline`` it is blocked
    on one of ``fifos``: they are opened for writing to free it, and the test fails."""
    got: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            got.append(fn())
        except BaseException as exc:  # handed to the test
            failed.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(deadline)
    if t.is_alive():
        while t.is_alive():
            unblock(fifos)
            t.join(0.1)
        raise AssertionError(f"the read blocked on a FIFO for {deadline} s")
    if failed:
        raise failed[0]
    return got[0]


KINDS = (*_KINDS, "device") if _can_make_devices() else _KINDS
