"""Every user-facing condition of OpenClawBrain, as one exception tree.

Each instance carries a one-line message, a ``hint`` naming the fix, and the data
that describes the condition. The CLI prints ``error: <message>`` and
``hint: <hint>`` and exits 1; callers of the library catch ``OcbError``. An
``InputError`` names the library's parameters (``top``), listed in its ``params``; the
CLI and other front ends render them as they name them (``--top``).

    OcbError
    ├── LogError
    │   ├── LogCorrupt           a damaged record (checksum, framing, hash chain)
    │   ├── LogTruncated         records the log is known to have held are gone
    │   ├── LogConflict          append with a stale expected_seq
    │   ├── LogWriteFailed       the disk refused an append (the log is rolled back)
    │   ├── LogUnavailable       a PostgreSQL log that cannot be reached or logged into
    │   ├── UnknownEventType     a tag this version cannot decode
    │   └── BrainLocked          another process holds the writer lock
    ├── BrainError
    │   ├── BrainNotFound        no brain at the path
    │   ├── BrainExists          init on a brain built from another workspace
    │   ├── BlobMissing          a vector blob named by the log is gone or damaged
    │   ├── BlobWriteFailed      the disk refused a blob (nothing was recorded)
    │   └── EmbedderMismatch     the brain was built with another embedder
    ├── EmbedderUnavailable      the brain's embedder cannot run here (a missing
    │                            extra, a model file that is not the pinned one, an
    │                            endpoint that fails); nothing was recorded
    ├── WorkspaceError           a missing, empty or non-directory workspace
    ├── AnalyticsError           a SQL error, or an analytics store that cannot be
    │                            opened or updated (the message is DuckDB's)
    └── InputError               bad arguments: an unknown trace, chat or node id,
                                 an outcome outside [-1, 1], an empty query ...
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path


class OcbError(Exception):
    """Base of every error a user can cause or fix."""

    hint: str = ""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        if hint:
            self.hint = hint


class LogError(OcbError):
    """A problem with the event log on disk."""


REPAIR_HINT = (
    "restore the log from a backup, or run `ocb verify --repair` to keep every intact "
    "record and mark the lost ones"
)


class LogCorrupt(LogError):
    """A damaged record: a complete frame that fails its checksum, framing that does not
    hold with valid records after it, or a hash chain that does not link."""

    def __init__(self, segment: str, offset: int, seq: int, reason: str) -> None:
        super().__init__(
            f"log corrupt at seq {seq} (segment {segment}, offset {offset}): {reason}",
            "the log was damaged outside OpenClawBrain (records before this seq are "
            "intact); " + REPAIR_HINT,
        )
        self.segment = segment
        self.offset = offset
        self.seq = seq
        self.reason = reason


class LogTruncated(LogError):
    """The log holds fewer records than it is known to have held (its TAIL checkpoint,
    the seals of its segments or the brain's snapshots say so): records were lost to a
    truncated or deleted segment, and nothing may start a new history over them."""

    def __init__(self, present: int, held: int, evidence: str) -> None:
        super().__init__(
            f"the log ends at seq {present} but held records up to seq {held} ({evidence}): "
            f"records {present + 1}..{held} are lost",
            REPAIR_HINT,
        )
        self.present = present
        self.held = held
        self.evidence = evidence


class LogConflict(LogError):
    """An append whose expected_seq is no longer the last seq of the log."""

    def __init__(self, expected_seq: int, last_seq: int) -> None:
        super().__init__(
            f"log moved on: expected last seq {expected_seq}, found {last_seq}",
            "re-read the brain and decide again",
        )
        self.expected_seq = expected_seq
        self.last_seq = last_seq


class LogWriteFailed(LogError):
    """The operating system refused an append; the segment was rolled back."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(
            f"could not append to {path}: {reason}",
            "free disk space or fix permissions, then retry; nothing was recorded",
        )
        self.path = path


class LogUnavailable(LogError):
    """A log on PostgreSQL that cannot be reached (server down, unreachable host, wrong
    password, missing extra). ``url`` is the log's address without its password, the
    only form of it any message shows."""

    def __init__(self, url: str, reason: str, hint: str = "") -> None:
        super().__init__(
            f"the log at {url} is unavailable: {reason}",
            hint
            or "start the server (or fix the URL or the password), then retry; nothing "
            "was recorded",
        )
        self.url = url
        self.reason = reason


class UnknownEventType(LogError):
    """A record whose tag this version of OpenClawBrain does not know."""

    def __init__(self, tag: str, segment: str, offset: int) -> None:
        super().__init__(
            f"unknown event type {tag!r} (segment {segment}, offset {offset})",
            "this brain was written by a newer OpenClawBrain; upgrade to read it",
        )
        self.tag = tag
        self.segment = segment
        self.offset = offset


class BrainLocked(LogError):
    """Another process holds the brain's write lock."""

    def __init__(self, path: Path, pid: int | None) -> None:
        holder = f"pid {pid}" if pid else "another process"
        super().__init__(
            f"brain {path} is locked by {holder}",
            "stop that process, or wait for it to finish, then retry",
        )
        self.path = path
        self.pid = pid


class BrainError(OcbError):
    """A problem with the brain directory as a whole."""


class BrainNotFound(BrainError):
    """No brain exists at the given path."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"no brain at {path}",
            f"create one with: ocb init --workspace DIR --brain {path}",
        )
        self.path = path


class BrainExists(BrainError):
    """init was asked to attach a brain to a second workspace."""

    def __init__(self, path: Path, workspace: str, requested: str) -> None:
        super().__init__(
            f"brain {path} was built from workspace {workspace}, not {requested}",
            "use a new --brain directory for this workspace",
        )
        self.path = path


class BlobMissing(BrainError):
    """A blob named by the log is absent or does not match its hash."""

    def __init__(self, digest: str, reason: str) -> None:
        super().__init__(
            f"blob {digest[:12]} {reason}",
            "run `ocb doctor --repair` to regenerate lost vectors from the log",
        )
        self.digest = digest


class BlobWriteFailed(BrainError):
    """The operating system refused to store a blob; the records naming it were not
    appended."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(
            f"could not store {path}: {reason}",
            "free disk space or fix permissions, then retry; nothing was recorded",
        )
        self.path = path


class EmbedderMismatch(BrainError):
    """The brain's vectors come from another embedder than the one in use."""

    def __init__(self, recorded: str, current: str, fix: str = "") -> None:
        super().__init__(
            f"this brain's vectors were built with {recorded!r}; {current!r} would mix "
            "vector spaces",
            "keep the brain's embedder, or switch every vector at once: "
            + (fix or "ocb reembed --embedder SPEC --brain B"),
        )
        self.recorded = recorded
        self.current = current


class EmbedderUnavailable(OcbError):
    """An embedder the brain needs cannot run: its optional packages are missing, its
    model file is not the pinned one, or its endpoint does not answer."""


class WorkspaceError(OcbError):
    """The workspace path is missing, not a directory, or holds no indexable file."""


class AnalyticsError(OcbError):
    """Raised by the analytics store (``replay.analytics``) for a query DuckDB refuses
    (the message is DuckDB's own) or a store it cannot open, lock or update. The store
    is derived from the log, so deleting it is always safe: it is rebuilt."""


class InputError(OcbError):
    """An argument that names nothing, or a value out of its range.

    The message and the fix speak of the library's parameters by their names (``top
    must be at least 1, got 0``; ``pass top=5``), which ``params`` lists, the one the
    error is about first; a front end that names them otherwise (the CLI's ``--top``)
    renders them in its own words.
    """

    def __init__(self, message: str, hint: str = "", *, param: str | Sequence[str] = "") -> None:
        super().__init__(message, hint)
        names = (param,) if isinstance(param, str) else tuple(param)
        self.params: tuple[str, ...] = tuple(n for n in names if n)
        """The parameters the message and the fix name (empty: none)."""

    @property
    def param(self) -> str:
        """The parameter the error is about ("" when it names none)."""
        return self.params[0] if self.params else ""


def unknown(
    kind: str,
    name: str,
    known: Sequence[str],
    hint: str,
    where: str = "",
    *,
    cutoff: float = 0.6,
    param: str | Sequence[str] = "",
) -> InputError:
    """An InputError for a name that names nothing (``where`` ends its message),
    suggesting the close matches of ``known`` (the one "did you mean" of the product);
    ``param``: the parameters the message or the hint names."""
    close = close_matches(name, known, cutoff)
    return unknown_with(kind, name, close, hint, where, param=param)


def unknown_with(
    kind: str,
    name: str,
    close: Sequence[str],
    hint: str,
    where: str = "",
    *,
    param: str | Sequence[str] = "",
) -> InputError:
    """``unknown`` with the suggestions already chosen (``close``: may be empty)."""
    if close:
        hint = "did you mean " + ", ".join(close) + "?"
    return InputError(f"unknown {kind} {name!r}{where}", hint, param=param)


def close_matches(name: str, known: Sequence[str], cutoff: float = 0.6) -> list[str]:
    """Up to three names of ``known`` close to ``name``, found with case ignored and
    given in their spelling."""
    spelled: dict[str, str] = {}
    for k in known:
        spelled.setdefault(k.lower(), k)
    close = difflib.get_close_matches(name.lower(), list(spelled), n=3, cutoff=cutoff)
    return [spelled[c] for c in close]
