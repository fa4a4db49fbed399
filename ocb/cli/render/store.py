"""Rendering what changes the brain's storage (``snapshot``, ``forget``): the stable JSON
objects (documented in README.md) and the human text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocb.cli.render.encode import fields

if TYPE_CHECKING:
    from ocb.upkeep.forget import ForgetReport


def snapshot_json(written: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """``[{projection, seq}]``, one per snapshot written."""
    return [{"projection": name, "seq": seq} for name, seq in written]


def snapshot_text(written: list[tuple[str, int]]) -> str:
    if not written:
        return "nothing to snapshot"
    return "\n".join(f"snapshot {name} at seq {seq}" for name, seq in written)


def forget_json(r: ForgetReport) -> dict[str, Any]:
    return fields(r)


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
