"""Workspace paths that hold a secret (a folder or file named with a token): a sync
never records one, since a path is in every record about its file and in the id of
each of its chunks.

Such a file is skipped and listed with its path redacted (``Scanner.redact_name``), in
``ocb init``, every sync and the daemon's watcher alike. A file a brain indexed before
paths were checked is held as it is: no sync records its path again (not even its
removal or a move, which would name it), until ``ocb forget --file`` erases it from the
history. A workspace whose own path holds a secret is refused before anything is
recorded.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ocb.redaction import holds_secret
from ocb_events.errors import WorkspaceError
from workspace_sync import FileText, Skipped
from workspace_sync.secrets import Redacted, Scanner

__all__ = ["check_root", "secret_paths"]

RENAME = "its name holds a secret ({kinds}): rename it to index it"
RECORDED = (
    "its name holds a secret ({kinds}), recorded before names were checked: rename it, "
    "and erase the old name with ocb forget --file"
)


def _kinds(r: Redacted) -> str:
    return ", ".join(sorted({f.kind for f in r.findings}))


def check_root(root: str, scanner: Scanner) -> None:
    """Refuse to attach a workspace whose path holds a secret (it would be recorded).

    Raises:
        WorkspaceError: naming the kind of secret, never the secret.
    """
    r = scanner.redact_name(root)
    if r.findings:
        raise WorkspaceError(
            f"the workspace path {r.text} holds a secret ({_kinds(r)}); nothing was recorded",
            "rename that directory, then run ocb init again",
        )


def secret_paths(
    files: Sequence[FileText],
    skipped: Sequence[Skipped],
    known: Collection[str],
    scanner: Scanner,
    scope: frozenset[str] | None = None,
) -> tuple[list[FileText], list[Skipped], frozenset[str]]:
    """The files a sync may record; what it skips, every path shown redacted, the files
    named with a secret among them with why; and the paths of ``known`` (the files the
    brain holds) to hold as they are: the ones named with a secret, within ``scope``.
    Of the known paths only those a sync would otherwise remove or move are scanned."""
    known = frozenset(known)
    seen = {f.path for f in files} | {sk.path for sk in skipped}
    gone = [p for p in sorted(known - seen) if scope is None or p in scope]
    if not holds_secret(scanner, (), [*seen, *gone]):  # one scan in the common case
        return list(files), list(skipped), frozenset()
    clean: list[FileText] = []
    out: list[Skipped] = []
    held: set[str] = set()
    for f in files:
        r = scanner.redact_name(f.path)
        if not r.findings:
            clean.append(f)
            continue
        held.update({f.path} & known)
        out.append(
            Skipped(r.text, (RECORDED if f.path in known else RENAME).format(kinds=_kinds(r)))
        )
    for sk in skipped:
        r = scanner.redact_name(sk.path)
        held.update({sk.path} & known if r.findings else ())
        out.append(Skipped(r.text, sk.reason))
    for path in gone:
        r = scanner.redact_name(path)
        if r.findings:
            held.add(path)
            out.append(Skipped(r.text, RECORDED.format(kinds=_kinds(r))))
    out.sort(key=lambda s: s.path)
    return clean, out, frozenset(held)
