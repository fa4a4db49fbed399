"""Typed-memory workspaces shared by the memory, CLI and secrets tests: daily logs with
``## Retain`` sections (``LOGS``, read by a brain at ``NOW``) and the workspace that
reflect summarises (``make_ws``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from ocb.engine.dates import day_start
from ocb_events.clock import TickClock

NOW = day_start(dt.date(2026, 11, 22)) + 9 * 3600 * 10**9
"""The morning after the daily logs below: when ``clock()`` starts."""


LOGS = {
    "memory/2026-11-01.md": """# 2026-11-01

## Retain
- B @database @slow-endpoint: the orders endpoint takes 4s because of a missing index
- W @Peter: Peter owns the billing service
- W @database: nightly backups finish at 2am
""",
    "memory/2026-11-20.md": """# 2026-11-20

Notes from standup.

## Retain
- B @app: app performance regressed after the 3.2 release
- W @app @slow-endpoint: the mobile client calls the orders endpoint on every screen
- O(c=0.8) @Peter: prefers short written updates over meetings
- W @Alice @billing: Alice joins the billing team next week
""",
    "memory/2026-11-21.md": """# 2026-11-21

## Retain
- B(s=0.9) @deploy: the Friday deploy was rolled back
""",
    "bank/opinions.md": "# Opinions\n- O(c=0.6) @deploy: Friday deploys are risky\n",
}


def clock() -> TickClock:
    """A clock at ``NOW`` ticking a microsecond per call."""
    return TickClock(start_ns=NOW, step_ns=1_000)


DAY_LOG = "memory/2026-11-20.md"
"""The daily log of ``make_ws``."""
BASE = [
    "- W(s=0.9) @Peter: owns the billing service",
    "- B @Peter: drinks green tea every morning",
    "- W @Alice: leads the search team",
    "- B(s=0.3) @Peter @Alice: reviewed the search rollout plan together",
]


OPINIONS = (
    "# Opinions\n\n"
    "- O(c=0.60) @Peter: prefers green tea over coffee\n"
    "- O(c=0.5) @Alice: the search team ships carefully\n"
)


def make_ws(
    tmp_path: Path,
    retain: Sequence[str] = BASE,
    opinions: str = OPINIONS,
    pages: dict[str, str] | None = None,
) -> Path:
    """A workspace at ``tmp_path / "ws"`` for reflect: one daily log retaining
    ``retain`` about Peter and Alice, a note, ``bank/opinions.md`` and extra ``pages``."""
    ws = tmp_path / "ws"
    files = {
        DAY_LOG: "# 2026-11-20\n\nTalked with Peter about the billing migration.\n\n## Retain\n"
        + "".join(line + "\n" for line in retain),
        "notes/peter.md": "# Peter\n\nPeter prefers async reviews.\n",
        "bank/opinions.md": opinions,
        **(pages or {}),
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(text.encode())
    return ws
