"""Reflect: entity summaries and opinion confidence written under bank/ only, with the
evidence links; recorded once, idempotent, replayable; the CLI's text, JSON and errors."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.engine.dates import DAY_NS, day_start
from ocb.memory.reflect import bank_texts, decide_reflect, default_judge, move_confidence, reflect
from ocb_events.clock import TickClock
from ocb_events.errors import InputError, WorkspaceError
from ocb_events.schema import ReflectRan
from projections import memory
from projections.memory import Fact
from replay import rebuild
from tests.ocb.memory.support import BASE, make_ws

NOW = day_start(dt.date(2026, 11, 21)) + 9 * 3600 * 10**9
PETER = (
    "# Peter\n"
    "\n"
    "<!-- reflect writes the Summary section; edit the other sections freely -->\n"
    "\n"
    "## Summary\n"
    "- S @Peter: Owns the billing service. Prefers green tea over coffee. Drinks green tea"
    " every morning. Reviewed the search rollout plan together.\n"
    "  - sources: memory/2026-11-20.md#L6, bank/opinions.md#L3-L4, memory/2026-11-20.md#L7,"
    " memory/2026-11-20.md#L9\n"
)
runner = CliRunner()


def open_brain(tmp_path: Path, ws: Path) -> Brain:
    b, _ = Brain.init(tmp_path / "brain", ws, clock=TickClock(start_ns=NOW, step_ns=10**9))
    return b


def tree(root: Path) -> dict[str, bytes]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def outside_bank(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in tree(root).items() if not k.startswith("bank/")}


def reflect_events(b: Brain) -> list[ReflectRan]:
    return [r.event for r in b.events(types=["reflect_ran"])]  # type: ignore[misc]


def test_reflect_writes_the_summary_and_moves_the_opinion(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_brain(tmp_path, ws) as b:
        before = outside_bank(ws)
        report = reflect(b.store, "7d")
        assert (ws / "bank/entities/Peter.md").read_bytes() == PETER.encode()
        assert (ws / "bank/opinions.md").read_text() == (
            "# Opinions\n\n"
            "- O(c=0.63) @Peter: prefers green tea over coffee\n"
            "  - evidence: memory/2026-11-20.md#L7\n"
            "- O(c=0.5) @Alice: the search team ships carefully\n"
        )
        assert not (ws / "bank/entities/Alice.md").exists()  # no Alice fact is priority
        assert outside_bank(ws) == before
        assert report.written == ["bank/entities/Peter.md", "bank/opinions.md"]
        assert [(c.path, c.change, c.subject) for c in report.changes] == [
            ("bank/entities/Peter.md", "entity_summary", "Peter"),
            ("bank/opinions.md", "opinion_confidence", "f1"),
        ]
        op = report.changes[1]
        assert (op.before, op.after, op.sources) == ("0.60", "0.63", ("memory/2026-11-20.md#L7",))
        [ev] = reflect_events(b)
        assert ev.priority == ("f3",) and report.seq > 0
        assert ev.changes[1].supporting == ("f4",) and ev.changes[1].contradicting == ()
        assert ev.changes[0].supporting == ("f3", "f1", "f4", "f6")
        assert b.state("memory").applied == {"f1": ("f4",)}

        [hit] = b.recall(entities=["Peter"], kinds=["O"]).results
        assert (hit.confidence, hit.evidence) == (0.63, ("memory/2026-11-20.md#L7",))
        assert hit.source == "bank/opinions.md#L3-L4"
        summary = b.recall(entities=["Peter"], kinds=["S"]).results[0]
        assert summary.evidence == report.changes[0].sources

        seq, files = b.log.last_seq, tree(ws)
        again = reflect(b.store, "7d")
        assert (again.seq, again.changes, again.written) == (0, [], [])
        assert b.log.last_seq == seq and tree(ws) == files
        live = memory.snapshot(b.state("memory"))
        assert memory.snapshot(rebuild(b.log, ["memory"])["memory"]) == live


def test_an_existing_page_keeps_its_other_sections(tmp_path: Path) -> None:
    head = "# Peter\n\nPeter is on the payments team.\n\n"
    notes = "## Notes\n- W @Peter: sits next to the window\n\n### Old\nkept as is   \n"
    page = head + "## Summary\n- S @Peter: an old summary\n\n" + notes
    ws = make_ws(tmp_path, BASE[:2], pages={"bank/entities/Peter.md": page})
    with open_brain(tmp_path, ws) as b:
        reflect(b.store, "7d")
        text = (ws / "bank/entities/Peter.md").read_text()
        assert text == (
            head + "## Summary\n"
            "- S @Peter: Owns the billing service. Prefers green tea over coffee. Sits next to"
            " the window. Drinks green tea every morning.\n"
            "  - sources: memory/2026-11-20.md#L6, bank/opinions.md#L3-L4,"
            " bank/entities/Peter.md#L10, memory/2026-11-20.md#L7\n\n" + notes
        )
        assert text.splitlines()[9] == "- W @Peter: sits next to the window"
        seq = b.log.last_seq
        assert reflect(b.store, "7d").seq == 0 and b.log.last_seq == seq


def test_a_page_without_a_summary_gets_one_after_its_title(tmp_path: Path) -> None:
    page = "# Peter\nIntro line.\n## Notes\nfree text\n"
    ws = make_ws(tmp_path, BASE[:1], pages={"bank/entities/Peter.md": page})
    with open_brain(tmp_path, ws) as b:
        reflect(b.store, "7d")
        assert (ws / "bank/entities/Peter.md").read_text() == (
            "# Peter\nIntro line.\n\n## Summary\n"
            "- S @Peter: Owns the billing service. Prefers green tea over coffee.\n"
            "  - sources: memory/2026-11-20.md#L6, bank/opinions.md#L3\n\n"
            "## Notes\nfree text\n"
        )


def tea_facts(saliences: Sequence[float], negated: int = 0) -> list[str]:
    out = [f"- W(s=0.9) @Peter: owns the billing service number {len(saliences)}"]
    for i, s in enumerate(saliences):
        verb = "no longer drinks" if i < negated else "drinks"
        out.append(f"- B(s={s}) @Peter: {verb} green tea at meeting {i + 1}")
    return out


@pytest.mark.parametrize(
    ("saliences", "start", "expected"),
    [
        ([0.6], "0.60", "0.63"),  # one supporting piece: +0.05 x 0.6
        ([0.5] * 6, "0.50", "0.60"),  # many weak pieces: capped at +0.10
        ([1.0] * 2 + [0.5] * 4, "0.50", "0.60"),  # two strong ones are not enough
        ([0.9] * 3, "0.50", "0.64"),  # 3 strong: 0.635, half up
        ([1.0] * 6, "0.50", "0.75"),  # repeated strong evidence: capped at +0.25
        ([1.0] * 6, "0.90", "0.98"),  # never above 0.98
    ],
)
def test_confidence_moves_by_the_evidence(
    tmp_path: Path, saliences: list[float], start: str, expected: str
) -> None:
    opinions = f"# Opinions\n\n- O(c={start}) @Peter: prefers green tea over coffee\n"
    ws = make_ws(tmp_path, tea_facts(saliences), opinions)
    with open_brain(tmp_path, ws) as b:
        report = reflect(b.store, "7d")
        [op] = [c for c in report.changes if c.change == "opinion_confidence"]
        assert (op.before, op.after) == (start, expected)
        assert len(op.supporting) == len(saliences)
        assert f"O(c={expected}) @Peter" in (ws / "bank/opinions.md").read_text()
        links = ", ".join(f"memory/2026-11-20.md#L{7 + i}" for i in range(len(saliences)))
        assert f"  - evidence: {links}\n" in (ws / "bank/opinions.md").read_text()


def test_contradicting_evidence_moves_it_down_and_both_count_as_used(tmp_path: Path) -> None:
    opinions = (
        "# Opinions\n\n"
        "- @Peter: prefers green tea over coffee\n"  # no kind: O(c=0.5) on this page
        "- O(s=0.7) @Peter: green tea is the best drink\n"
        "  - evidence: notes/peter.md#L3\n"
    )
    ws = make_ws(tmp_path, tea_facts([0.8, 0.8, 0.4], negated=2), opinions)
    with open_brain(tmp_path, ws) as b:
        reflect(b.store, "7d")
        text = (ws / "bank/opinions.md").read_text()
        assert text == (
            "# Opinions\n\n"
            "- O(c=0.44) @Peter: prefers green tea over coffee\n"
            "  - evidence: memory/2026-11-20.md#L7, memory/2026-11-20.md#L8,"
            " memory/2026-11-20.md#L9\n"
            "- O(c=0.44)(s=0.7) @Peter: green tea is the best drink\n"
            "  - evidence: notes/peter.md#L3, memory/2026-11-20.md#L7, memory/2026-11-20.md#L8,"
            " memory/2026-11-20.md#L9\n"
        )
        ops = [c for c in reflect_events(b)[0].changes if c.change == "opinion_confidence"]
        assert [(c.before, c.after, c.supporting, c.contradicting) for c in ops] == [
            ("0.50", "0.44", ("f6",), ("f4", "f5")),
            ("0.50", "0.44", ("f6",), ("f4", "f5")),
        ]
        assert b.state("memory").applied["f1"] == ("f4", "f5", "f6")
        seq = b.log.last_seq
        assert reflect(b.store, "7d").seq == 0 and b.log.last_seq == seq


def test_recalled_facts_within_the_window_are_priority(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    clock = TickClock(start_ns=NOW, step_ns=10**9)
    b, _ = Brain.init(tmp_path / "brain", ws, clock=clock)
    with b:
        reflect(b.store, "7d")
        b.recall(entities=["Alice"], kinds=["W"])
        clock.advance(10 * DAY_NS)
        assert reflect(b.store, "7d").seq == 0  # the recall is out of the window
        report = reflect(b.store, "30d")
        assert "f5" in report.priority
        assert report.written == ["bank/entities/Alice.md", "bank/opinions.md"]
        assert (ws / "bank/entities/Alice.md").read_text().splitlines()[4:] == [
            "## Summary",
            "- S @Alice: The search team ships carefully. Leads the search team. Reviewed the"
            " search rollout plan together.",
            "  - sources: bank/opinions.md#L5-L6, memory/2026-11-20.md#L8, memory/2026-11-20.md#L9",
        ]
        assert (
            "- O(c=0.53) @Alice: the search team ships carefully\n"
            in (ws / "bank/opinions.md").read_text()
        )


def test_summarize_and_judge_callbacks(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)

    def summarize(name: str, facts: Sequence[Fact]) -> str:
        return f"{name} has {len(facts)} facts,\n  first {facts[0].id}"

    with open_brain(tmp_path, ws) as b:
        report = reflect(b.store, "7d", summarize=summarize, judge=lambda o, f: -1)
        assert report.changes[0].after.splitlines()[0] == "- S @Peter: Peter has 4 facts, first f3"
        assert (report.changes[1].after, report.changes[1].contradicting) == ("0.57", ("f4",))


def test_decide_is_pure_and_empty_after_its_writes_are_applied(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_brain(tmp_path, ws) as b:
        mem = b.state("memory")
        files = tree(ws)
        plan = decide_reflect(mem, bank_texts(ws), NOW, NOW - 7 * DAY_NS)
        assert tree(ws) == files and plan.event is not None
        assert all(w.path.startswith("bank/") for w in plan.writes)
        for w in plan.writes:
            (ws / w.path).parent.mkdir(parents=True, exist_ok=True)
            (ws / w.path).write_text(w.text)
        b.store.record([plan.event], "reflect", expected_seq=b.log.last_seq)
        b.sync(ws, cause="reflect")
        again = decide_reflect(b.state("memory"), bank_texts(ws), NOW, NOW - 7 * DAY_NS)
        assert (again.event, again.writes) == (None, ())


def test_default_judge_and_move() -> None:
    assert default_judge("prefers tea", "drinks tea daily") == 1
    assert default_judge("prefers tea", "doesn't drink tea") == -1
    assert default_judge("never late", "stopped being late") == 1
    assert default_judge("likes tea", "no longer drinks tea") == -1
    assert move_confidence(0.6, [(1, 0.6)]) == 0.63
    assert move_confidence(0.03, [(-1, 1.0)] * 5) == 0.02
    assert move_confidence(0.5, [(1, 1.0)] * 3 + [(-1, 0.9)] + [(1, 1.0)] * 3) == 0.6


def test_bad_input_and_read_only_brains(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_brain(tmp_path, ws) as b:
        with pytest.raises(InputError, match="cannot read `since` '3x'"):
            reflect(b.store, "3x")
    with Brain(tmp_path / "brain", as_of=2) as past:
        with pytest.raises(InputError, match="as of seq 2"):
            reflect(past.store)
    with Brain.create(tmp_path / "empty", clock=TickClock()) as empty:
        with pytest.raises(WorkspaceError, match="no workspace"):
            reflect(empty.store)
    assert not (ws / "bank/entities").exists()


# --------------------------------------------------------------------------- CLI


def ocb(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def cli_brain(tmp_path: Path) -> tuple[Path, Path]:
    ws = make_ws(tmp_path)
    Brain.init(tmp_path / "brain", ws, clock=TickClock(start_ns=NOW))[0].close()
    return tmp_path / "brain", ws


def test_cli_reflect_text_then_nothing(tmp_path: Path) -> None:
    brain, ws = cli_brain(tmp_path)
    code, out, err = ocb("reflect", "--brain", str(brain), "--since", "2026-11-14")
    assert (code, err) == (0, "")
    assert out == (
        "reflected on 1 priority fact(s) since 2026-11-14T00:00:00Z: 2 change(s), recorded at"
        " seq 10\n"
        "  bank/entities/Peter.md: summary of Peter\n"
        "    before: (none)\n"
        "    after: - S @Peter: Owns the billing service. Prefers green tea over coffee. Drinks"
        " green tea every morning. Reviewed the search rollout plan together.\n"
        "    sources: memory/2026-11-20.md#L6, bank/opinions.md#L3-L4, memory/2026-11-20.md#L7,"
        " memory/2026-11-20.md#L9\n"
        "  bank/opinions.md: opinion f1 confidence 0.60 -> 0.63\n"
        "    supporting: f4; contradicting: none\n"
        "    evidence: memory/2026-11-20.md#L7\n"
        "wrote bank/entities/Peter.md, bank/opinions.md\n"
    )
    assert (ws / "bank/entities/Peter.md").read_text() == PETER
    code, out, _ = ocb("reflect", "--brain", str(brain), "--since", "2026-11-14")
    assert (code, out) == (
        0,
        "nothing to reflect: 1 priority fact(s) since 2026-11-14T00:00:00Z;"
        " nothing written or recorded\n",
    )


def test_cli_reflect_json(tmp_path: Path) -> None:
    brain, _ = cli_brain(tmp_path)
    code, out, _ = ocb("reflect", "--brain", str(brain), "--since", "7d", "--json")
    assert code == 0
    got = json.loads(out)
    assert list(got) == ["seq", "since_ns", "since", "priority", "changes", "written"]
    assert (got["seq"], got["priority"], got["written"]) == (
        10,
        ["f3"],
        ["bank/entities/Peter.md", "bank/opinions.md"],
    )
    assert got["changes"][1] == {
        "path": "bank/opinions.md",
        "change": "opinion_confidence",
        "subject": "f1",
        "before": "0.60",
        "after": "0.63",
        "supporting": ["f4"],
        "contradicting": [],
        "sources": ["memory/2026-11-20.md#L7"],
    }


def test_cli_reflect_bad_since_is_one_error_and_one_hint(tmp_path: Path) -> None:
    brain, ws = cli_brain(tmp_path)
    files, segs = tree(ws), tree(brain / "log")
    code, out, err = ocb("reflect", "--brain", str(brain), "--since", "3x")
    assert (code, out) == (1, "")
    assert err == (
        "error: cannot read --since '3x'\n"
        "hint: give a span like 30d, 2w or 12h, or a date YYYY-MM-DD\n"
    )
    assert tree(ws) == files and tree(brain / "log") == segs


# --------------------------------------------------------------------------- fixed point


def test_a_second_run_on_the_example_workspace_writes_and_records_nothing(
    tmp_path: Path, workspace: Path
) -> None:
    b, _ = Brain.init(tmp_path / "brain", workspace, clock=TickClock(start_ns=NOW))
    with b:
        first = reflect(b.store, "2026-01-01")
        assert first.seq > 0 and len(first.written) > 10
        seq, files = b.log.last_seq, tree(workspace)
        again = reflect(b.store, "2026-01-01")
        assert (again.seq, again.changes, again.written) == (0, [], [])
        assert b.log.last_seq == seq and tree(workspace) == files


def test_facts_of_equal_rank_keep_their_order_when_reflect_revises_one(tmp_path: Path) -> None:
    # Both opinions rank the same (salience, undated page); moving the second one's
    # confidence revises it, which must not put it first on the next run.
    opinions = (
        "# Opinions\n\n"
        "- O @Peter: likes short meetings\n"
        "- O @Peter: likes green tea more than coffee\n"
    )
    ws = make_ws(tmp_path, BASE[:2], opinions)
    with open_brain(tmp_path, ws) as b:
        first = reflect(b.store, "7d")
        assert [c.subject for c in first.changes] == ["Peter", "f2"]
        assert first.changes[0].sources[1:3] == ("bank/opinions.md#L3", "bank/opinions.md#L4-L5")
        seq, files = b.log.last_seq, tree(ws)
        assert reflect(b.store, "7d").seq == 0
        assert b.log.last_seq == seq and tree(ws) == files


WORDS = ["green tea", "billing service", "search rollout", "coffee"]
VERBS = ["drinks", "owns", "prefers", "no longer likes"]
bullets = st.tuples(
    st.sampled_from(["B", "W"]),
    st.sampled_from(["", "(s=0.9)", "(s=0.6)"]),
    st.sampled_from(VERBS),
    st.sampled_from(WORDS),
)
where = st.sampled_from(["memory/2026-11-19.md", "memory/2026-11-20.md", "bank/world.md"])


def page(lines: Sequence[str], title: str = "# Notes\n\n## Retain\n") -> str:
    return title + "".join(line + "\n" for line in lines)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.tuples(bullets, where), min_size=1, max_size=9),
    st.lists(bullets, max_size=4),
)
def test_a_second_run_changes_no_byte_and_records_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    facts: list[tuple[tuple[str, str, str, str], str]],
    opinions: list[tuple[str, str, str, str]],
) -> None:
    files: dict[str, list[str]] = {}
    for (kind, params, verb, what), path in facts:
        files.setdefault(path, []).append(f"- {kind}{params} @Peter: {verb} the {what}")
    ops = [f"- O{p} @Peter: {v} the {w}" for _, p, v, w in opinions]
    tmp = tmp_path_factory.mktemp("fixed")
    pages = {p: page(lines) for p, lines in files.items()}
    ws = make_ws(tmp, BASE[:1], page(ops, "# Opinions\n\n"), pages)
    with open_brain(tmp, ws) as b:
        reflect(b.store, "7d")
        seq, before = b.log.last_seq, tree(ws)
        again = reflect(b.store, "7d")
        assert (again.seq, again.changes, again.written) == (0, [], [])
        assert tree(ws) == before and b.log.last_seq == seq


# --------------------------------------------------------------------------- writes


def test_existing_bank_files_keep_their_mode(tmp_path: Path) -> None:
    page = "# Peter\n\n## Notes\nfree text\n"
    ws = make_ws(tmp_path, pages={"bank/entities/Peter.md": page})
    os.chmod(ws / "bank/entities/Peter.md", 0o644)
    os.chmod(ws / "bank/opinions.md", 0o664)
    with open_brain(tmp_path, ws) as b:
        assert reflect(b.store, "7d").written == ["bank/entities/Peter.md", "bank/opinions.md"]
    assert stat.S_IMODE((ws / "bank/entities/Peter.md").stat().st_mode) == 0o644
    assert stat.S_IMODE((ws / "bank/opinions.md").stat().st_mode) == 0o664
    assert "## Summary\n- S @Peter: " in (ws / "bank/entities/Peter.md").read_text()


def test_a_symlinked_page_stays_a_link_and_its_target_gets_the_summary(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, pages={"bank/people/peter.md": "# Peter\n\n## Notes\nfree text\n"})
    (ws / "bank/entities").mkdir()
    os.symlink("../people/peter.md", ws / "bank/entities/Peter.md")
    with open_brain(tmp_path, ws) as b:
        assert reflect(b.store, "7d").written == ["bank/entities/Peter.md", "bank/opinions.md"]
        assert os.readlink(ws / "bank/entities/Peter.md") == "../people/peter.md"
        text = (ws / "bank/people/peter.md").read_text()
        assert text.startswith("# Peter\n\n## Summary\n- S @Peter: Owns the billing service.")
        assert text.endswith("\n\n## Notes\nfree text\n")
        seq, files = b.log.last_seq, tree(ws)
        assert reflect(b.store, "7d").seq == 0  # the links to both names follow its edit
        assert b.log.last_seq == seq and tree(ws) == files


def test_a_page_linked_out_of_the_workspace_is_left_alone(tmp_path: Path) -> None:
    outside = tmp_path / "peter.md"
    outside.write_text("# Peter\n")
    ws = make_ws(tmp_path)
    (ws / "bank/entities").mkdir()
    os.symlink(outside, ws / "bank/entities/Peter.md")
    warnings: list[str] = []
    b, _ = Brain.init(tmp_path / "brain", ws, clock=TickClock(start_ns=NOW), warn=warnings.append)
    with b:
        assert reflect(b.store, "7d").written == ["bank/opinions.md"]
    assert outside.read_text() == "# Peter\n"
    assert os.readlink(ws / "bank/entities/Peter.md") == str(outside)
    assert "skipped bank/entities/Peter.md: symlink points outside the workspace" in warnings


def test_two_pages_of_one_file_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    retain = [*BASE, "- W(s=0.9) @Pete: sits next to the window"]
    ws = make_ws(tmp_path, retain, pages={"bank/entities/Peter.md": "# Peter\n"})
    os.symlink("Peter.md", ws / "bank/entities/Pete.md")
    with open_brain(tmp_path, ws) as b:
        seq, files = b.log.last_seq, tree(ws)
        with pytest.raises(WorkspaceError) as err:
            reflect(b.store, "7d")
        assert err.value.message == (
            "reflect will not write bank/entities/Peter.md: it is the same file as"
            " bank/entities/Pete.md"
        )
        assert b.log.last_seq == seq and tree(ws) == files
