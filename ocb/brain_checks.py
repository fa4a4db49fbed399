"""The checks of a brain (``ocb.brain.Brain`` inherits them). Those that must work on
a log that cannot be opened take the brain's path (``doctor_at``, ``repair``,
``verify_at``); each delegates to its module, imported when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ocb.store import Store, Warn

if TYPE_CHECKING:
    from ocb.checks.repair import BrainRepair
    from ocb.checks.rewrite import BrainRewrite
    from ocb.checks.verify import Head, Verification
    from ocb.log_migrate import Migration
    from ocb.shared_log import Location
    from ocb.upkeep.blobs import BlobReport
    from replay.verify import Check, Progress as Counted

__all__ = ["CheckCommands"]


class CheckCommands:
    """Doctor, repair and verify a brain, by path or over ``self.store``."""

    store: Store

    @staticmethod
    def doctor_at(
        path: str | Path, *, repair: bool = False, as_of: int | str | None = None
    ) -> tuple[list[Check], BlobReport | None]:
        """Every health check of the brain at ``path``, whose log may be damaged (its
        check then fails), and the blob repair run first with ``repair`` (else None).
        Raises InputError for ``repair`` with ``as_of``, BrainNotFound without a brain."""
        from ocb.checks.brain import doctor

        return doctor(path, repair=repair, as_of=as_of)

    @staticmethod
    def repair(path: str | Path, *, warn: Warn | None = None) -> BrainRepair:
        """Repair a damaged log, which cannot be opened: intact records are kept, lost
        ones become tombstones keeping their seq (``ocb.checks.repair``). Raises
        BrainNotFound without a brain at ``path``, BrainLocked when another writes it."""
        from ocb.checks.repair import repair_brain

        return repair_brain(Path(path), warn=warn)

    @staticmethod
    def rewrite(path: str | Path, *, warn: Warn | None = None) -> BrainRewrite:
        """Rewrite the log in the current storage format, verified before and after
        (``ocb.checks.rewrite``). Raises BrainNotFound without a brain at ``path``,
        BrainLocked when another writes it, LogCorrupt when the log does not verify."""
        from ocb.checks.rewrite import rewrite_brain

        return rewrite_brain(Path(path), warn=warn)

    @staticmethod
    def migrate_log(
        path: str | Path, *, to: str | None = None, to_local: bool = False
    ) -> Migration:
        """Copy the brain's log to a shared PostgreSQL log (``to``: a URL) or back
        (``to_local``), verified (``ocb.log_migrate``). Raises InputError for neither or
        both, BrainNotFound without a brain, LogCorrupt when the log does not verify,
        LogUnavailable when the server cannot be reached, LogError when the target is
        not empty or the copy's chain differs."""
        from ocb.log_migrate import migrate_log

        return migrate_log(Path(path), to=to, to_local=to_local)

    @staticmethod
    def attach_log(path: str | Path, url: str, workspace: str | Path | None = None) -> Location:
        """Record that the brain at ``path`` keeps its log on the shared PostgreSQL log
        at ``url`` (``ocb.shared_log.attach``: the password goes to a 0600 file, never
        into the log); the next open joins it. Raises InputError for a URL that is not
        PostgreSQL's or a brain whose log is already elsewhere."""
        from ocb.shared_log import attach

        return attach(Path(path), url, None if workspace is None else Path(workspace))

    @staticmethod
    def install_command(extra: str) -> str:
        """The shell command that installs the optional ``extra`` for the ocb running
        here (``ocb.engine.extras``), for the hint of an error that needs it."""
        from ocb.engine.extras import install_command

        return install_command(extra)

    @staticmethod
    def parse_heads(texts: list[str], *, repair: bool = False) -> list[Head]:
        """The heads ``--head`` names, each ``SEQ:HEX`` (``ocb.checks.verify``);
        InputError for one of another shape, or for heads with ``repair``."""
        from ocb.checks.verify import parse_heads

        return parse_heads(texts, repair=repair)

    @staticmethod
    def verify_at(
        path: str | Path,
        *,
        heads: list[Head] | None = None,
        warn: Warn | None = None,
        progress: Counted | None = None,
    ) -> Verification:
        """The log's framing, checksums, seqs and chain and the head of the chain, each
        of ``heads`` kept earlier against it, then (when the log holds) every snapshot
        against a rebuild (``ocb.checks.verify``). Raises BrainNotFound: no brain."""
        from ocb.checks.verify import verify_brain

        return verify_brain(path, heads=heads, warn=warn, progress=progress)

    def check_projections(self) -> list[Check]:
        """Every projection as loaded (newest snapshot + tail) against a full rebuild."""
        from replay.verify import verify_live

        return verify_live(self.store.log, self.store.snapshots)
