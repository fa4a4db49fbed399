"""The doctor's typed-memory checks: hubs, near-duplicates, cold start, recall budget
and access decay, each in its pass and warn case, and through ``ocb doctor --json``."""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.checks.brain import run_doctor
from ocb.checks.memory import (
    MEMORY_CHECKS,
    budget_check,
    cold_start_check,
    decay_check,
    duplicate_check,
    hub_check,
    memory_checks,
    near_duplicates,
)
from ocb.cli.app import app
from ocb.settings import Memory
from ocb_events.clock import TickClock
from ocb_events.schema import (
    Event,
    FactKind,
    FactSpec,
    FactsRecorded,
    RecallHit,
    RecallTraced,
    Record,
)
from projections.memory import DAY_NS, State as MemoryState, evolve, initial
from replay.verify import PASS, SKIP, WARN, Check
from workspace_sync.text import terms

NOW = 1_767_225_600_000_000_000
Bullet = tuple[str, Sequence[str]]  # content, entities


def spec(
    fid: str, content: str, entities: Sequence[str] = (), line: int = 1, kind: FactKind = "W"
) -> FactSpec:
    return FactSpec(
        id=fid,
        kind=kind,
        content=content,
        entities=tuple(sorted(entities)),
        start_line=line,
        end_line=line,
        text_hash=str(hash(content)),
        salience=0.5,
    )


def file_of(
    path: str, bullets: Sequence[Bullet], first: int = 1, kind: FactKind = "W"
) -> FactsRecorded:
    """One file's facts, one per line, with ids ``path:line``."""
    facts = tuple(
        spec(f"{path}:{first + i}", c, es, first + i, kind) for i, (c, es) in enumerate(bullets)
    )
    return FactsRecorded(path=path, content_hash="h", facts=facts)


def fold(*events: Event) -> MemoryState:
    state = initial()
    for seq, ev in enumerate(events, 1):
        state = evolve(state, Record(seq=seq, ts=NOW + seq, actor="test", event=ev))  # type: ignore[arg-type]
    return state


def distinct(n: int, entities: Sequence[Sequence[str]] | None = None) -> list[Bullet]:
    """``n`` facts with no terms in common (beyond their entities)."""
    return [(f"alpha{i} beta{i} gamma{i}", entities[i] if entities else ()) for i in range(n)]


def ring(n: int, width: int = 10) -> list[Sequence[str]]:
    """Entities of ``n`` facts: fact i mentions e{i % width} and e{(i + 1) % width}."""
    return [(f"e{i % width}", f"e{(i + 1) % width}") for i in range(n)]


# --------------------------------------------------------------------------- hubs


def test_no_hub_passes_naming_the_widest_entity() -> None:
    mem = fold(file_of("memory/a.md", distinct(40, ring(40))))
    assert hub_check(mem) == Check(
        "memory hubs", PASS, "no hub: the widest, @e0, is in 20% of facts (8 of 40)"
    )


def test_an_entity_in_many_facts_is_a_hub() -> None:
    ents = [(*e, "project") if i % 8 < 3 else e for i, e in enumerate(ring(40))]
    mem = fold(file_of("memory/a.md", distinct(40, ents)))
    assert hub_check(mem) == Check(
        "memory hubs",
        WARN,
        "@project in 38% of facts (15 of 40): IDF damping keeps it from swallowing "
        "activation, but consider splitting it into narrower entities",
    )


def test_an_entity_holding_most_co_occurrence_is_a_hub() -> None:
    linked = distinct(25, [("router", f"x{i}") for i in range(25)])
    mem = fold(file_of("memory/a.md", linked), file_of("memory/b.md", distinct(95)))
    check = hub_check(mem)
    assert check.status == WARN
    assert check.detail.startswith(
        "@router in 21% of facts (25 of 120), 100% of co-occurrence weight: IDF damping"
    )


def test_hubs_are_skipped_without_facts() -> None:
    assert hub_check(initial()) == Check("memory hubs", SKIP, "no typed facts yet")


# --------------------------------------------------------------------------- duplicates


def test_distinct_facts_have_no_near_duplicates() -> None:
    mem = fold(file_of("memory/a.md", distinct(30)))
    assert duplicate_check(mem) == Check(
        "near-duplicate facts", PASS, "no two of 30 facts share 90% of their terms"
    )


TEN = "deploy pipeline canary staging rollback migration postgres replica pooling freeze"


def test_exact_and_near_duplicates_warn_with_the_first_pair() -> None:
    a = file_of("memory/a.md", [*distinct(3), (TEN, ())])  # line 4
    b = file_of(
        "memory/b.md",
        [(f"other{i}", ()) for i in range(8)] + [(TEN + " weekly", ()), (TEN.upper() + ".", ())],
    )  # lines 9 (near: 10 of 11 terms) and 10 (exact, case and punctuation aside)
    check = duplicate_check(fold(a, b))
    assert check == Check(
        "near-duplicate facts",
        WARN,
        "3 near-duplicate pair(s), e.g. memory/a.md#L4 ~ memory/b.md#L9: "
        "delete one of each pair or merge them into one bullet",
    )


def test_summaries_and_retired_facts_are_not_duplicates() -> None:
    summaries = file_of("bank/entities/Priya.md", [(TEN, ("Priya",)), (TEN, ("Priya",))], kind="S")
    old = file_of("memory/a.md", [(TEN, ("Priya",))])
    gone = FactsRecorded(path="memory/a.md", content_hash="h2", facts=())
    mem = fold(summaries, old, file_of("memory/b.md", [(TEN, ("Priya",))]), gone)
    assert duplicate_check(mem).status == PASS


def test_near_duplicates_are_found_among_ten_thousand_facts() -> None:
    rng = random.Random(7)
    vocab = [f"w{i}x" for i in range(3000)]
    bullets: list[Bullet] = [(" ".join(rng.sample(vocab, 9)), ()) for _ in range(10_000)]
    planted = [(100, 9_000), (2_345, 7_777), (5_000, 5_001)]
    for src, dst in planted[:2]:
        bullets[dst] = bullets[src]  # exact
    content, _ = bullets[5_000]
    bullets[5_001] = (content + " extraterm", ())  # 9 of 10 terms shared
    files = [file_of(f"memory/f{k:03}.md", bullets[k * 100 : k * 100 + 100]) for k in range(100)]
    mem = fold(*files)
    assert mem.size == 10_000
    check = duplicate_check(mem)
    assert check.status == WARN
    assert check.detail.startswith(
        "3 near-duplicate pair(s), e.g. memory/f001.md#L1 ~ memory/f090.md#L1:"
    )


# --------------------------------------------------------------------------- cold start


def test_cold_start_is_skipped_without_facts_and_warns_with_few() -> None:
    skipped = cold_start_check(initial())
    assert skipped.status == SKIP and skipped.detail.startswith(
        "no typed facts yet: add a ## Retain"
    )
    few = fold(file_of("memory/a.md", distinct(5, [("a", "b")] * 5)))
    assert cold_start_check(few) == Check(
        "associative recall data",
        WARN,
        "associative recall has little to work with (5 facts, 1 linked entity pairs): "
        "retain facts with 2+ @entities",
    )
    unlinked = fold(file_of("memory/a.md", distinct(30, [("solo",)] * 30)))
    assert cold_start_check(unlinked).detail.startswith("associative recall has little")


def test_enough_facts_and_links_pass() -> None:
    mem = fold(file_of("memory/a.md", distinct(25, ring(25))))
    assert cold_start_check(mem) == Check(
        "associative recall data", PASS, "25 facts, 10 linked entity pairs over 10 entities"
    )


# --------------------------------------------------------------------------- budget


def recalls(n: int, cut: int) -> list[Event]:
    return [
        RecallTraced(trace_id=f"r{i}", query="q", hits=(), dropped=2 if i < cut else 0)
        for i in range(n)
    ]


def test_recall_budget_share() -> None:
    s = Memory()
    assert budget_check(initial(), s) == Check("recall bundles over budget", SKIP, "no recalls yet")
    ok = budget_check(fold(*recalls(10, 2)), s)
    assert ok == Check(
        "recall bundles over budget",
        PASS,
        "20% of recalls (2 of 10) cut by the 2000-character budget",
    )
    over = budget_check(fold(*recalls(10, 3)), Memory(max_chars=1500))
    assert over == Check(
        "recall bundles over budget",
        WARN,
        "30% of recalls (3 of 10) were cut by the 1500-character budget: raise "
        "memory.max_chars (e.g. ocb config memory.max_chars 3000) or ask for fewer with --k",
    )


# --------------------------------------------------------------------------- decay


def test_default_decay_passes() -> None:
    assert decay_check(initial(), Memory(), NOW) == Check(
        "access decay settings",
        PASS,
        "half-life 7 days: a fact recalled once 14 days ago keeps access 0.27 "
        "(never recalled 0.25)",
    )


def test_decay_counts_recalled_facts_still_boosted_at_now() -> None:
    hit = RecallHit(fact_id="memory/a.md:1", score=1.0)
    mem = fold(RecallTraced(trace_id="r1", query="q", hits=(hit,)))
    assert decay_check(mem, Memory(), NOW).detail.endswith(
        "; 1 of 1 recalled facts still rank above it"
    )
    later = NOW + 30 * DAY_NS
    assert decay_check(mem, Memory(), later).detail.endswith(
        "; 0 of 1 recalled facts still rank above it"
    )


@pytest.mark.parametrize(
    ("settings", "detail"),
    [
        (
            Memory(half_life_days=3.0),
            "a fact recalled once 14 days ago keeps access 0.042, under a quarter of a "
            "never-recalled fact's 0.25: set memory.half_life_days to at least 4",
        ),
        (
            Memory(never_accessed=5.0),
            "a fact recalled once 14 days ago keeps access 0.267, under a quarter of a "
            "never-recalled fact's 5: set memory.never_accessed to 0.25",
        ),
        (
            Memory(w_access=0.8),
            "memory.w_access 0.8 outweighs w_match + w_salience (0.75), so recency drowns "
            "relevance: set memory.w_access to 0.25",
        ),
    ],
)
def test_decay_settings_that_erase_memories_warn(settings: Memory, detail: str) -> None:
    assert decay_check(initial(), settings, NOW) == Check("access decay settings", WARN, detail)


# --------------------------------------------------------------------------- real brains


DAY_LOG = """# 2026-11-20

## Retain

- W @Priya @deploy: owns the deploy pipeline and reviews migrations.
- B @Marco @Postgres: ran the replica failover drill on staging.
- O(c=0.7) @Noor: prefers written runbooks over pairing.
"""


@pytest.fixture
def small_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-11-20.md").write_text(DAY_LOG, encoding="utf-8")
    (ws / "notes.md").write_text("# Notes\n\nDeploys go through canary first.\n", "utf-8")
    return ws


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_run_doctor_adds_the_memory_checks_and_reads_config(
    tmp_path: Path, small_workspace: Path
) -> None:
    path = tmp_path / "brain"
    brain, _ = Brain.init(path, small_workspace, clock=TickClock())
    with brain:
        checks = run_doctor(path)
        assert [c.name for c in checks[-5:]] == list(MEMORY_CHECKS)
        got = by_name(checks)
        assert got["associative recall data"].detail.startswith(
            "associative recall has little to work with (3 facts, 2 linked entity pairs)"
        )
        assert got["access decay settings"].status == PASS
        brain.set_config("memory.half_life_days", 0.5)
    decay = by_name(run_doctor(path))["access decay settings"]
    assert decay == Check(
        "access decay settings",
        WARN,
        "memory.half_life_days 0.5 erases a recalled fact's boost within days: set it to 7",
    )


def test_run_doctor_as_of_looks_at_the_time_of_that_record(
    tmp_path: Path, small_workspace: Path
) -> None:
    path = tmp_path / "brain"
    brain, _ = Brain.init(path, small_workspace, clock=TickClock())
    with brain:
        brain.recall("deploy pipeline")
        seq = brain.log.last_seq
    decay = by_name(run_doctor(path, as_of=seq))["access decay settings"]
    # looked at when the recall was recorded, every fact it returned is still boosted
    got = re.search(r"; (\d+) of (\d+) recalled facts still rank above it$", decay.detail)
    assert decay.status == PASS and got is not None
    assert got[1] == got[2] and int(got[1]) > 0
    assert by_name(run_doctor(path, as_of=1))["memory hubs"].status == SKIP


def test_memory_checks_are_in_order() -> None:
    checks = memory_checks(initial(), Memory(), NOW)
    assert [c.name for c in checks] == list(MEMORY_CHECKS)
    assert [c.status for c in checks] == [SKIP, SKIP, SKIP, SKIP, PASS]


def test_doctor_json_includes_the_memory_checks(tmp_path: Path, small_workspace: Path) -> None:
    path = tmp_path / "brain"
    runner = CliRunner()
    res = runner.invoke(app, ["init", "--workspace", str(small_workspace), "--brain", str(path)])
    assert res.exit_code == 0
    res = runner.invoke(app, ["doctor", "--brain", str(path), "--json"], prog_name="ocb")
    assert res.exit_code == 0
    out = json.loads(res.stdout)
    statuses = {c["name"]: c["status"] for c in out["checks"]}
    assert {n: statuses[n] for n in MEMORY_CHECKS} == {
        "memory hubs": PASS,
        "near-duplicate facts": PASS,
        "associative recall data": WARN,
        "recall bundles over budget": SKIP,
        "access decay settings": PASS,
    }
    assert out["ok"] is True


TOKENS = [f"t{i}x" for i in range(40)]


@st.composite
def variants(draw: st.DrawFn) -> list[list[str]]:
    """Term lists that are small edits of a few bases, so near-duplicates are common."""
    bases = draw(
        st.lists(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=25), min_size=1, max_size=3)
    )
    out = []
    for _ in range(draw(st.integers(0, 25))):
        base = list(draw(st.sampled_from(bases)))
        drop = draw(st.sets(st.integers(0, len(base) - 1), max_size=2))
        add = draw(st.lists(st.sampled_from(TOKENS), max_size=2))
        out.append([t for k, t in enumerate(base) if k not in drop] + add or ["lone"])
    return out


@settings(deadline=None)
@given(variants())
def test_near_duplicates_match_all_pairs(term_lists: list[list[str]]) -> None:
    bullets: list[Bullet] = [(" ".join(ts), ()) for ts in term_lists]
    facts = sorted(fold(file_of("memory/a.md", bullets)).facts.values(), key=lambda f: f.start_line)
    sets = [frozenset(terms(f.content)) for f in facts]
    pairs = [
        (i, j)
        for i, j in itertools.combinations(range(len(sets)), 2)
        if 10 * len(sets[i] & sets[j]) >= 9 * len(sets[i] | sets[j])
    ]
    count, first = near_duplicates(facts)
    assert count == len(pairs)
    assert first == ((facts[pairs[0][0]], facts[pairs[0][1]]) if pairs else None)
