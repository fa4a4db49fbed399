"""A decision carries the seq it was made at: when another writer appends between the
decision and its record (as a daemon's clients will), the append is refused with
``LogConflict`` and nothing of the stale decision is recorded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ocb.brain import Brain
from ocb_events.errors import LogConflict
from ocb_events.schema import ConfigChanged


def interloper(brain: Brain) -> None:
    """Another writer's record, appended behind the command's back."""
    brain.log.append([ConfigChanged(key="traversal.max_hops", value="4")], actor="other")


def _during(brain: Brain, monkeypatch: pytest.MonkeyPatch, target: str, name: str) -> None:
    """Append the interloper's record when ``target.name`` is first called, mid-decision."""
    module = __import__(target, fromlist=[name])
    real: Callable[..., Any] = getattr(module, name)

    calls = []

    def late(*args: Any, **kw: Any) -> Any:
        if not calls:  # once, however often the decision calls it
            interloper(brain)
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(module, name, late)


@pytest.mark.parametrize(
    ("command", "target", "name"),
    [
        ("kg", "ocb.memory.kg", "redact_input"),
        ("sync", "ocb.graph.sync", "_settled_plan"),
        ("anchor", "ocb.upkeep.maintain", "_relative"),
        ("learn", "ocb.graph.learn", "decide_learn"),
        ("inject", "ocb.graph.inject", "decide_inject"),
    ],
)
def test_a_decision_made_before_another_writer_appended_is_refused(
    brain: Brain,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    target: str,
    name: str,
) -> None:
    trace = brain.query("how do I roll back a bad deploy", chat_id="c1").trace_id
    (workspace / "notes" / "late.md").write_text("# Late\n\nA note written after init.\n")
    run = {
        "kg": lambda: brain.kg_set("lumen-api", "owner", "team-a"),
        "sync": lambda: brain.sync(workspace),
        "anchor": lambda: brain.anchor("canonical", path="runbooks/deploy.md"),
        "learn": lambda: brain.learn(1.0, trace_id=trace),
        "inject": lambda: brain.inject("TEACHING", "Check the canary first"),
    }[command]
    _during(brain, monkeypatch, target, name)
    before = brain.log.last_seq
    with pytest.raises(LogConflict):
        run()
    assert brain.log.last_seq == before + 1, "only the other writer's record"
    last = next(iter(brain.log.read(before + 1)))
    assert last.actor == "other"
