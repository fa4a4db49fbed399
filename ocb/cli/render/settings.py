"""Rendering ``ocb config`` as text: the settings in force, which of them were recorded,
and what each one is (the JSON object is ``ocb.wire``'s)."""

from __future__ import annotations

import json
from typing import Any

from ocb.settings import lookup


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
