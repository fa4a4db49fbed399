"""Small read helpers for the CLI: event-type validation and the settings view."""

from __future__ import annotations

from typing import Any

import msgspec

from ocb.api import Brain
from ocb.commands import unknown
from ocb.settings import SECTIONS, resolve
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
    """The settings in force by ``section.name``, and which of them were recorded."""
    recorded_values = brain.state("config").values
    values = {
        f"{section}.{k}": v
        for section, cls in SECTIONS.items()
        for k, v in msgspec.structs.asdict(resolve(cls, recorded_values)).items()
    }
    if key is not None:
        if key not in values:
            raise unknown("setting", key, sorted(values), "run ocb config to list settings")
        values = {key: values[key]}
    recorded = sorted(k for k in brain.state("config").values if k in values)
    return {"settings": values, "recorded": recorded}


def settings_text(d: dict[str, Any]) -> str:
    rec = set(d["recorded"])
    return "\n".join(
        f"{k} = {v}" + ("   (recorded)" if k in rec else "")
        for k, v in sorted(d["settings"].items())
    )


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
