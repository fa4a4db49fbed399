"""Golden files: ``check(name, text)`` compares with tests/golden/<name>; with
OCB_UPDATE_GOLDEN=1 it rewrites the file instead (review the diff)."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("OCB_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"missing golden file {path}; run with OCB_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"
