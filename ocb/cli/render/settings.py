"""Rendering ``ocb config``: the settings in force, which of them were recorded, and
what each one is."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ocb.settings import in_force, lookup, registry


def settings_json(recorded: Mapping[str, Any], key: str | None = None) -> dict[str, Any]:
    """Every setting in force (or only ``key``) by ``section.name``, given the recorded
    values: ``{"settings", "recorded", "keys"}``.

    Raises:
        InputError: an unknown key (naming the close matches).
    """
    known = registry()
    keys = list(known) if key is None else [lookup(key).key]
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
