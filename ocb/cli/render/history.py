"""Small read helpers for the CLI: event-type validation and the settings view."""

from __future__ import annotations

import json
from typing import Any

from ocb.brain import Brain
from ocb.settings import in_force, lookup, registry
from ocb_events.errors import unknown
from ocb_events.schema import EVENT_TYPES


def event_tags() -> list[str]:
    """Every event type tag, sorted."""
    return sorted(str(t.__struct_config__.tag) for t in EVENT_TYPES)


def check_types(types: list[str]) -> list[str]:
    """The given event types, each checked to exist.

    Raises:
        InputError: an unknown type (with close matches).
    """
    tags = event_tags()
    for t in types:
        if t not in tags:
            raise unknown("event type", t, tags, "known types: " + ", ".join(tags))
    return types


def settings_json(brain: Brain, key: str | None = None) -> dict[str, Any]:
    """Every setting in force (or only ``key``) by ``section.name``, which of them
    were recorded, and what each one is: ``{"settings", "recorded", "keys"}``.

    Raises:
        InputError: an unknown key (naming the close matches).
    """
    known = registry()
    keys = list(known) if key is None else [lookup(key).key]
    recorded = brain.state("config").values
    values = in_force(recorded)
    return {
        "settings": {k: values[k] for k in keys},
        "recorded": [k for k in keys if k in recorded],
        "keys": {k: known[k].about() for k in keys},
    }


def settings_text(d: dict[str, Any]) -> str:
    """One ``key = value`` line per setting (JSON values), recorded ones marked; a
    single setting also shows its meaning, type, bounds and default."""
    rec = set(d["recorded"])
    lines = [
        f"{k} = {json.dumps(v)}" + ("   (recorded)" if k in rec else "")
        for k, v in d["settings"].items()
    ]
    if len(lines) == 1:
        s = lookup(next(iter(d["settings"])))
        lines += [f"  {s.description}", f"  {s.rules()}"]
    return "\n".join(lines)


def snapshot_text(written: list[tuple[str, int]]) -> str:
    if not written:
        return "nothing to snapshot"
    return "\n".join(f"snapshot {name} at seq {seq}" for name, seq in written)


def findings_json(found: list[Any]) -> dict[str, Any]:
    """``{"ok", "checks": [{"what", "ok", "detail"}]}``."""
    return {
        "ok": all(f.ok for f in found),
        "checks": [{"what": f.what, "ok": f.ok, "detail": f.detail} for f in found],
    }


def findings_text(found: list[Any]) -> str:
    return "\n".join(f"{'PASS' if f.ok else 'FAIL'}  {f.what}: {f.detail}" for f in found)


def repair_json(r: Any) -> dict[str, Any]:
    """``{"repair": {...}}`` after ``--repair`` (empty otherwise)."""
    if r is None:
        return {}
    return {
        "repair": {
            "lost": [{"first": a, "last": b} for a, b in r.lost],
            "torn_bytes": r.torn_bytes,
            "rebased_from": r.rebased_from,
            "segments": r.segments,
            "snapshots_removed": r.snapshots_removed,
            "recorded": r.recorded,
        }
    }


def repair_text(r: Any) -> str:
    if not r.changed:
        return "nothing to repair"
    lost = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in r.lost) or "none"
    lines = [
        f"repaired the log: seqs lost (now tombstones): {lost}; "
        f"unfinished batch dropped: {r.torn_bytes} bytes",
        f"  hash chain recomputed from seq {r.rebased_from}; rewrote {len(r.segments)} "
        f"segment(s); removed {r.snapshots_removed} snapshot(s) and the caches",
        f"  recorded as log_repaired at seq {r.recorded}",
    ]
    return "\n".join(lines)
