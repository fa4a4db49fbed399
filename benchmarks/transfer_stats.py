"""Small shared helpers of the transfer protocols' summaries (``locomo_transfer``,
``transfer_params``): record selection, paired differences, rounding, JSON out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from locomo_learning import paired_ci


def r4(x: float) -> float:
    """Rounded for the JSON summaries (stable bytes, readable numbers)."""
    return round(float(x), 4)


def mean(xs: list[float] | list[bool]) -> float:
    """The mean, 0.0 for nothing."""
    return r4(np.mean(xs)) if len(xs) else 0.0


def diff(a: list[float], b: list[float], seed: int) -> dict[str, float]:
    """Means of a and b, and the mean of b - a with its paired 95 % bootstrap interval."""
    if not a:
        return {"a": 0.0, "b": 0.0, "diff": 0.0, "lo": 0.0, "hi": 0.0}
    d, lo, hi = paired_ci(np.array(a, dtype=float), np.array(b, dtype=float), seed)
    return {"a": mean(a), "b": mean(b), "diff": r4(d), "lo": r4(lo), "hi": r4(hi)}


def ci(d: dict[str, float]) -> str:
    """A ``diff`` as ``+0.012 [-0.003, +0.027]``."""
    return f"{d['diff']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]"


def pick(records: list[dict], name: str, feedback: str | None, rnd: int | None = None) -> dict:
    """The records of pass ``name`` by qid (of one feedback and round when given)."""
    return {
        r["qid"]: r
        for r in records
        if r["pass"] == name
        and (feedback is None or r.get("feedback") == feedback)
        and (rnd is None or r["round"] == rnd)
    }


def write_json(path: Path, obj: dict[str, Any]) -> None:
    path.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")
