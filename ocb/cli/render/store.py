"""Rendering what changes the brain's storage (``snapshot``, ``forget``) as text (the
JSON objects are ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.upkeep.forget import ForgetReport


def snapshot_text(written: list[tuple[str, int]]) -> str:
    if not written:
        return "nothing to snapshot"
    return "\n".join(f"snapshot {name} at seq {seq}" for name, seq in written)


def forget_text(r: ForgetReport) -> str:
    seqs = ", ".join(str(s) for s in r.seqs[:12]) + (" ..." if len(r.seqs) > 12 else "")
    head = "would forget" if r.dry_run else "forgot"
    names = ", ".join(r.field_names[:8]) + (" ..." if len(r.field_names) > 8 else "")
    line = f"{head} {r.what} in {len(r.seqs)} record(s) (seq {seqs}): {r.fields} field(s)"
    line += f" ({names})" if names else ""
    if r.dry_run:
        return line
    return (
        f"{line}, {r.blobs} vector blob(s) embedded again; snapshots and caches deleted "
        "(commands rebuild them from the log); "
        f"recorded as content_forgotten at seq {r.recorded}"
    )
