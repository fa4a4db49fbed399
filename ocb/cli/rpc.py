"""The ``ocb`` command line as a daemon runs it for the thin client (``ocb.daemon.methods``'s
``App``): each command says how the daemon runs it with its ``runs`` mark, and ``kind``
reads that mark from the command ``argv`` names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ocb.cli.options import Runs

__all__ = ["CommandLine", "marks"]


Mark = tuple[Runs, bool]


def _mark(cmd: Any) -> Mark | None:
    got: Mark | None = getattr(cmd.callback, "ocb_runs", None)
    return got


def _subs(cmd: Any) -> Mapping[str, Any]:
    """The sub commands of a group (typer's click command), none of a command."""
    subs: Mapping[str, Any] = getattr(cmd, "commands", {})
    return subs


def marks(root: Any) -> Iterator[tuple[str, Mark | None]]:
    """(``sub command`` path, its mark or None) of every command under ``root`` (the
    app's click command) that runs something: each leaf, and each group that has a
    callback of its own."""

    def walk(cmd: Any, path: str) -> Iterator[tuple[str, Mark | None]]:
        subs = _subs(cmd)
        if not subs or (path and cmd.callback is not None):
            yield path, _mark(cmd)
        for name, sub in sorted(subs.items()):
            yield from walk(sub, f"{path} {name}".strip())

    return walk(root, "")


class CommandLine:
    """The ``ocb`` app (``root``, its click command) for a daemon."""

    def __init__(self, root: Any) -> None:
        self.root = root

    def _named(self, argv: list[str]) -> Any:
        """The command ``argv`` names (its words before the first option), or None."""
        cmd = self.root
        for word in argv:
            if word.startswith("-") or not _subs(cmd):
                break
            sub = _subs(cmd).get(word)
            if sub is None:
                return None
            cmd = sub
        return None if cmd is self.root else cmd

    def kind(self, argv: list[str]) -> Runs:
        """How the daemon runs ``ocb <argv>``: as its command's mark says (a write when
        it names none), a read with ``--help``, ``--as-of`` or (where marked)
        ``--dry-run``."""
        cmd = self._named(argv)
        kind, dry = (_mark(cmd) if cmd is not None else None) or ("write", False)
        if kind in ("exclusive", "local"):
            return kind
        if kind == "history" and "--help" not in argv:
            return "history"
        if kind == "read" or "--help" in argv or (dry and "--dry-run" in argv):
            return "read"
        if "--as-of" in argv or any(a.startswith("--as-of=") for a in argv):
            return "read"
        return "write"

    def main(self, argv: list[str]) -> None:
        self.root.main(args=argv, prog_name="ocb", standalone_mode=True)
