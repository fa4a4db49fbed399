"""In-process LoCoMo adapter for typed-memory recall (``Brain.recall``), for
``tools/evaluate.py --adapter``.

build(workspace, state) copies the workspace to ``<state>/workspace`` and rewrites its
daily logs *line for line* (line numbers unchanged, so evidence lines stay valid):

    ## Session 3 (13:56)                 ->  ## Retain
    - 13:56 Caroline: I went to ...      ->  - B @Caroline: I went to ...

so every turn becomes one experience fact about its speaker, citing its own line. Then
``Brain.init(<state>/brain, <state>/workspace)`` with a ``TickClock`` (1 ms per record)
that starts at noon UTC of the day after the conversation's last daily log: the
questions are asked just after the conversation, so "last week" and "yesterday" in a
question mean what they would to the agent. The opened brain is kept per state dir.

query(state, question, k) = ``brain.recall(question, k=k, depth=RECALL_DEPTH,
max_chars=RECALL_MAX_CHARS, record=RECALL_RECORD)``; results are ``{"source", "text"}`` (text is
the fact's content, without the bullet's kind and entity prefix). With record on, every
recall is a trace that resets the access decay of the facts it returned, so later
questions of a conversation see earlier ones' recalls: the product's behaviour.

Environment (evaluate.py --set KEY=VALUE):
    RECALL_DEPTH        associative depth (default 2)
    RECALL_RECORD       1 = record each recall as a trace (default), 0 = read only
    RECALL_DURABILITY   Brain durability, "batch" (fsync every append, default) or "none"
    RECALL_MAX_CHARS    the recall's character budget (default 10**9, so k results come
                        back; 2000 is the product's default, ``memory.max_chars``)

At exit it writes ``<state>/recall_stats.json`` per conversation (questions, how many read
a date phrase and so were filtered to a window, how many returned nothing, mean share of
results reached via entities).
"""

from __future__ import annotations

import atexit
import datetime as dt
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ocb.brain import Brain
from ocb_events.clock import TickClock

DAY_NS = 86_400 * 10**9
_SESSION = re.compile(r"^## Session \d+\b.*$")
_TURN = re.compile(r"^- \d{1,2}:\d{2} ([^:]+?): (.*)$")
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})\.md$")
_BRAINS: dict[str, Brain] = {}
_STATS: dict[str, dict[str, Any]] = {}


def _entity(name: str) -> str:
    name = name.strip()
    return f"@[{name}]" if re.search(r"[^\w\-.]", name) else f"@{name}"


def rewrite_line(line: str) -> str:
    """One line of a daily log as a Retain line (the same line count, always)."""
    if _SESSION.match(line):
        return "## Retain"
    m = _TURN.match(line)
    if m:
        return f"- B {_entity(m[1])}: {m[2]}"
    return line


def rewrite_workspace(src: Path, dst: Path) -> dict[str, int]:
    """Copy ``src`` to ``dst`` with every Markdown file rewritten line for line."""
    shutil.copytree(src, dst)
    files = turns = sessions = 0
    for p in sorted(dst.rglob("*.md")):
        lines = p.read_text(encoding="utf-8").split("\n")
        out = [rewrite_line(x) for x in lines]
        assert len(out) == len(lines)
        turns += sum(1 for a, b in zip(lines, out, strict=True) if a != b and b.startswith("- B "))
        sessions += sum(1 for b in out if b == "## Retain")
        p.write_text("\n".join(out), encoding="utf-8")
        files += 1
    return {"files": files, "turn_lines": turns, "sessions": sessions}


def start_ns(workspace: Path) -> int:
    """Noon UTC of the day after the last dated file of the workspace."""
    days = [
        dt.date(int(m[1]), int(m[2]), int(m[3]))
        for p in workspace.rglob("*.md")
        if (m := _DAY.search(p.name))
    ]
    last = max(days) if days else dt.date(2026, 1, 1)
    epoch = (last + dt.timedelta(days=1) - dt.date(1970, 1, 1)).days
    return epoch * DAY_NS + DAY_NS // 2


def _settings() -> dict[str, Any]:
    return {
        "depth": int(os.environ.get("RECALL_DEPTH", "2")),
        "record": os.environ.get("RECALL_RECORD", "1") not in ("0", "", "false"),
        "durability": os.environ.get("RECALL_DURABILITY", "batch"),
        "max_chars": int(os.environ.get("RECALL_MAX_CHARS", str(10**9))),
    }


def build(workspace_dir: str, state_dir: str) -> None:
    state = Path(state_dir)
    ws = state / "workspace"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.rmtree(state / "brain", ignore_errors=True)
    state.mkdir(parents=True, exist_ok=True)
    counts = rewrite_workspace(Path(workspace_dir), ws)
    cfg = _settings()
    warnings: list[str] = []
    brain, report = Brain.init(
        state / "brain",
        ws,
        clock=TickClock(start_ns=start_ns(ws)),
        durability=cfg["durability"],
        warn=warnings.append,
    )
    old = _BRAINS.pop(state_dir, None)
    if old is not None:
        old.close()
    _BRAINS[state_dir] = brain
    cfg.update(counts)
    cfg.update(
        {
            "facts": report.facts,
            "fact_problems": len(report.fact_problems),
            "warnings": len(warnings),
            "clock_start": dt.datetime.fromtimestamp(start_ns(ws) / 1e9, dt.UTC).isoformat(),
        }
    )
    (state / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")


def _open(state_dir: str) -> Brain:
    """The brain of a state dir built earlier (``--reuse-state``): its clock goes on
    one second after its last record."""
    path = Path(state_dir) / "brain"
    last = 0
    with Brain(path, writer=False) as b:
        for rec in b.log.read(b.log.last_seq, b.log.last_seq):
            last = rec.ts
    clock = TickClock(start_ns=max(last + 10**9, start_ns(Path(state_dir) / "workspace")))
    return Brain(path, clock=clock, durability=_settings()["durability"])


def query(state_dir: str, question: str, k: int) -> list[dict[str, str]]:
    brain = _BRAINS.get(state_dir)
    if brain is None:
        brain = _BRAINS[state_dir] = _open(state_dir)
    cfg = _settings()
    ans = brain.recall(
        question, k=k, depth=cfg["depth"], max_chars=cfg["max_chars"], record=cfg["record"]
    )
    st = _STATS.setdefault(
        state_dir, {"questions": 0, "date_phrase": 0, "empty": 0, "via_share_sum": 0.0}
    )
    st["questions"] += 1
    st["date_phrase"] += bool(ans.date_phrase)
    st["empty"] += not ans.results
    if ans.results:
        st["via_share_sum"] += sum(1 for it in ans.results if it.via) / len(ans.results)
    return [{"source": it.source, "text": it.text} for it in ans.results]


@atexit.register
def _close() -> None:
    for state_dir, st in sorted(_STATS.items()):
        out = dict(st)
        out["via_share_mean"] = st["via_share_sum"] / max(1, st["questions"])
        del out["via_share_sum"]
        try:
            (Path(state_dir) / "recall_stats.json").write_text(json.dumps(out, indent=1) + "\n")
        except OSError:
            pass
    for b in _BRAINS.values():
        b.close()
    _BRAINS.clear()
