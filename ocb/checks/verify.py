"""``ocb verify``: the log (framing, checksums, seqs, hash chain), the head of its chain,
heads of the chain kept elsewhere (``--head SEQ:HEX``), and every snapshot against a
rebuild.

The chain value of record ``n`` names the exact history up to it, so a head kept
outside the brain (a cron job's log, a git commit) shows later whether that history
was rewritten, even with a consistent chain, which nothing inside the log can show.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from ocb.shared_log import location, verify_shared
from ocb.store import Store, Warn
from ocb_events.errors import InputError, OcbError
from ocb_events.frames import DIGEST_BYTES
from ocb_events.links import Vouch, vouch
from ocb_events.log import SegmentReport, verify_log
from replay.verify import FAIL, PASS, SKIP, WARN, Check, Progress, held, verify_snapshots

_HEAD = re.compile(rf"^(\d+):([0-9a-fA-F]{{{2 * DIGEST_BYTES}}})$")


class Head(msgspec.Struct, frozen=True):
    """A seq and the hex chain value of the history up to it."""

    seq: int
    chain: str

    @property
    def text(self) -> str:
        """``SEQ:HEX``, as ``--head`` takes it."""
        return f"{self.seq}:{self.chain}"


class Verification(msgspec.Struct, frozen=True):
    """The checks of ``ocb verify`` and the head of the chain (None when the log does
    not verify)."""

    checks: list[Check]
    head: Head | None


def parse_heads(texts: list[str], *, repair: bool = False) -> list[Head]:
    """The heads ``--head`` names, each ``SEQ:HEX`` (the head ``ocb verify`` prints).

    Raises:
        InputError: one is of another shape, or heads come with ``--repair`` (which
            gives the chain from the first repaired seq a new value).
    """
    if texts and repair:
        raise InputError(
            "--head checks the history as it is, and --repair gives its chain new values",
            "check the heads first (ocb verify --head SEQ:HEX), then repair; the repair "
            "prints the new head to keep",
        )
    out = []
    for text in texts:
        m = _HEAD.match(text.strip())
        if m is None or int(m.group(1)) < 1:
            raise InputError(
                f"--head takes SEQ:HEX, a seq and its {2 * DIGEST_BYTES}-digit chain value, "
                f"not {text!r}",
                "pass a head that ocb verify printed, e.g. --head 1200:" + "0f" * DIGEST_BYTES,
            )
        out.append(Head(int(m.group(1)), m.group(2).lower()))
    return out


def _head_check(head: Head, got: Vouch) -> Check:
    name = f"head {head.seq}"
    if got.chain is None:
        if head.seq > got.last_seq:
            return Check(
                name,
                FAIL,
                f"the log ends at seq {got.last_seq}: records up to seq {head.seq} are gone",
            )
        return Check(name, SKIP, f"the record at seq {head.seq} is damaged or lost")
    if got.chain.hex() != head.chain:
        return Check(
            name,
            FAIL,
            f"the chain at seq {head.seq} is {got.chain.hex()}, not {head.chain}: the history "
            f"up to seq {head.seq} was rewritten (or the head is of another brain)",
        )
    if got.first > 1:
        return Check(
            name,
            WARN,
            f"the chain at seq {head.seq} is as kept: it vouches for records "
            f"{got.first}..{head.seq} only; the chain breaks at seq {got.first - 1}",
        )
    return Check(name, PASS, f"the history up to seq {head.seq} is the one this head was kept of")


def check_heads(directory: Path, heads: list[Head]) -> list[Check]:
    """Each head against the chain value the log stores at its seq (read tolerantly, so
    a damaged log shows which of its records a head still vouches for)."""
    if not heads:
        return []
    got = vouch(directory, [h.seq for h in heads])
    return [_head_check(h, v) for h, v in zip(heads, got, strict=True)]


def _shared_check(brain: Path, heads: list[Head]) -> tuple[list[Check], Head | None]:
    """The log check and the head checks of a brain on a shared log (PostgreSQL)."""
    try:
        last, detail, chain, chains = verify_shared(brain, [h.seq for h in heads])
    except OcbError as exc:
        return [held("log", False, exc.message)], None
    found = [held("log", True, detail)]
    for h, c in zip(heads, chains, strict=True):
        found.append(_head_check(h, Vouch(h.seq, c, 1, last)))
    return found, Head(last, chain.hex()) if last else None


def _log_check(directory: Path) -> tuple[Check, Head | None]:
    try:
        reports: list[SegmentReport] = verify_log(directory)
    except OcbError as exc:
        return held("log", False, exc.message), None
    n = sum(r.records for r in reports)
    last = reports[-1] if reports else None
    chained = last is not None and last.last_seq > 0 and bool(last.chain)
    head = Head(last.last_seq, last.chain.hex()) if last is not None and chained else None
    detail = f"{n} records in {len(reports)} segment(s): framing, checksums, seqs, chain"
    return held("log", True, detail), head


def verify_brain(
    path: str | Path,
    *,
    heads: list[Head] | None = None,
    warn: Warn | None = None,
    progress: Progress | None = None,
) -> Verification:
    """The log of the brain at ``path`` (framing, checksums, seqs, hash chain) and its
    head, each of ``heads`` against it, then, when the log holds, every snapshot
    against a rebuild (``replay.verify``).

    Raises:
        BrainNotFound: no brain at ``path``.
    """
    log = Path(path) / "log"
    if location(Path(path)) is not None:
        found, head = _shared_check(Path(path), heads or [])
    else:
        first, head = _log_check(log)
        found = [first, *check_heads(log, heads or [])]
    if found[0].ok:
        with Store(path, writer=False, warn=warn) as store:
            found += verify_snapshots(store.log, store.snapshots, progress)
    return Verification(found, head)
