"""A decision carries the seq it was made at (``Store.transact``): when another writer
appends between the decision and its record (as a daemon's clients will), the append
is refused, the other writer's records are folded in, and the command decides again on
the brain as it is then; nothing of the stale decision is recorded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ocb.brain import Brain
from ocb.store import Decision, Store
from ocb.upkeep.health import check
from ocb_events.clock import TickClock
from ocb_events.errors import InputError, LogConflict
from ocb_events.memory import MemoryLog
from ocb_events.schema import ConfigChanged, Event
from tests.ocb.support import dormant_update

QUESTION = "how do I roll back a bad deploy"


def interloper(brain: Brain, key: str = "traversal.max_hops", value: int | float = 4) -> None:
    """Another writer's record, appended behind the command's back."""
    brain.log.append([ConfigChanged(key=key, value=value)], actor="other")


def _during(
    brain: Brain,
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    name: str,
    other: Callable[[], None] | None = None,
) -> list[int]:
    """Append the interloper's record when ``target.name`` is first called, mid-decision;
    returns the list of calls (one entry per call)."""
    module = __import__(target, fromlist=[name])
    real: Callable[..., Any] = getattr(module, name)

    calls: list[int] = []

    def late(*args: Any, **kw: Any) -> Any:
        if not calls:  # once, however often the decision calls it
            (other or (lambda: interloper(brain)))()
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(module, name, late)
    return calls


@pytest.mark.parametrize(
    ("command", "target", "name"),
    [
        ("kg", "ocb.memory.kg", "key"),
        ("sync", "ocb.graph.sync", "_settled_plan"),
        ("anchor", "ocb.upkeep.maintain", "_relative"),
        ("learn", "ocb.graph.learn", "decide_learn"),
        ("inject", "ocb.graph.inject", "decide_inject"),
        ("query", "ocb.graph.query", "decide_at"),
        ("config", "ocb.upkeep.config", "ConfigChanged"),
    ],
)
def test_a_decision_made_before_another_writer_appended_is_made_again(
    brain: Brain,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    target: str,
    name: str,
) -> None:
    trace = brain.query(QUESTION, chat_id="c1").trace_id
    (workspace / "notes" / "late.md").write_text("# Late\n\nA note written after init.\n")
    run = {
        "kg": lambda: brain.kg_set("lumen-api", "owner", "team-a"),
        "sync": lambda: brain.sync(workspace),
        "anchor": lambda: brain.anchor("canonical", path="runbooks/deploy.md"),
        "learn": lambda: brain.learn(1.0, trace_id=trace),
        "inject": lambda: brain.inject("TEACHING", "Check the canary first"),
        "query": lambda: brain.query(QUESTION, chat_id="c2"),
        "config": lambda: brain.set_config("traversal.max_seeds", 4),
    }[command]
    calls = _during(brain, monkeypatch, target, name)
    before = brain.log.last_seq
    run()
    assert len(calls) == 2, "decided again once the other writer's record was in"
    recs = list(brain.log.read(before + 1))
    assert recs[0].actor == "other" and len(recs) > 1
    assert all(r.actor != "other" for r in recs[1:]), "then the command's own records"
    assert brain.state("config").values["traversal.max_hops"] == 4, "folded in"


def _kill_edges(brain: Brain) -> None:
    """Every edge dormant: health finds brain death and proposes a lower habitual."""
    update = dormant_update(brain)
    brain.store.transact("maintenance", lambda _seq: [update])


def test_health_decides_on_the_settings_another_writer_changed_meanwhile(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    _kill_edges(brain)
    brain.query(QUESTION)
    report, _ = check(brain.store)
    assert [p.key for p in report.proposals] == ["traversal.habitual"]
    # another writer lowers the habitual bound below the proposal while health decides
    calls = _during(
        brain,
        monkeypatch,
        "ocb.upkeep.health",
        "assess",
        lambda: interloper(brain, "traversal.habitual", 0.0),
    )
    before = brain.log.last_seq
    report, recs = check(brain.store, apply=True)
    assert len(calls) == 2, "decided again once the other writer's record was in"
    assert "traversal.habitual" not in [p.key for p in report.proposals]
    assert [r.seq for r in recs] == list(range(before + 2, brain.log.last_seq + 1))
    assert all(r.event.key != "traversal.habitual" for r in recs)  # type: ignore[union-attr]
    assert brain.store.settings()[0].habitual == 0.0, "the other writer's setting stands"


def test_an_unknown_actor_is_refused_before_anything_is_recorded(brain: Brain) -> None:
    before = brain.log.last_seq
    with pytest.raises(InputError, match="unknown actor 'root'"):
        brain.query(QUESTION, actor="root")
    assert brain.log.last_seq == before


# ------------------------------------------------------------------ two handles, one log


def _hops(store: Store) -> int:
    value: int = store.state("config").values.get("traversal.max_hops", 3)
    return value


def _bump(store: Store) -> list[Event]:
    return [ConfigChanged(key="traversal.max_hops", value=_hops(store) + 1)]


def test_transact_decides_again_on_what_another_handle_recorded(tmp_path: Path) -> None:
    log = MemoryLog(clock=TickClock())
    a = Store(tmp_path / "a", clock=TickClock(), log=log)
    b = Store(tmp_path / "b", clock=TickClock(), log=log)
    a.load("config")
    seen: list[tuple[int, int]] = []

    def decide(seq: int) -> Decision:
        seen.append((seq, _hops(a)))
        if len(seen) == 1:  # b records between a's seq and a's record
            b.transact("cli", lambda _seq: _bump(b))
        return Decision(_bump(a))

    recs = a.transact("daemon", decide)
    assert seen == [(0, 3), (1, 4)], "decided again at b's seq, on b's record"
    assert [(r.seq, r.actor, r.event) for r in log.read()] == [
        (1, "cli", ConfigChanged(key="traversal.max_hops", value=4)),
        (2, "daemon", ConfigChanged(key="traversal.max_hops", value=5)),
    ]
    assert recs == list(log.read(2)) and _hops(a) == 5


def test_transact_gives_up_when_the_log_keeps_moving(tmp_path: Path) -> None:
    log = MemoryLog(clock=TickClock())
    a = Store(tmp_path / "a", clock=TickClock(), log=log)
    b = Store(tmp_path / "b", clock=TickClock(), log=log)

    def decide(_seq: int) -> list[Event]:
        b.transact("cli", lambda _s: _bump(b))
        return _bump(a)

    with pytest.raises(LogConflict):
        a.transact("daemon", decide, attempts=2)
    assert [r.actor for r in log.read()] == ["cli", "cli"], "nothing of a's decisions"


def test_transact_records_nothing_when_nothing_is_decided(tmp_path: Path) -> None:
    store = Store(tmp_path / "a", clock=TickClock(), log=MemoryLog(clock=TickClock()))
    assert store.transact("cli", lambda _seq: []) == []
    assert store.log.last_seq == 0
