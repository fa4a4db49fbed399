"""Typed facts from Markdown: parsing every kind, reporting malformed bullets, ids that
survive edits, and the retain edit of a daily log (exact bytes)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from workspace_sync import (
    FileText,
    PreviousFacts,
    assign_ids,
    diff_facts,
    estimate_salience,
    format_bullet,
    insert_retained,
    parse_facts,
)
from workspace_sync.facts import CLAIM_CONFIDENCE

DAILY = """# 2026-11-20

Standup. Not a fact:
- W @Nobody: bullets outside Retain are notes

## Retain
- W @Peter: Peter owns the billing service
- B @warelay @[Discord API]: shipped the bot (s=0.2 is only text)
- O(c=0.95) @Peter: prefers short written updates
  over meetings
  - evidence: memory/2026-11-19.md#L3, bank/world.md#L4-L6
- S: a quiet week overall
- B(s=0.9, c=0.3): p95 dropped to 300ms @database
- X @Peter: unknown kind
- O(c=1.5) @Peter: confidence out of range
- Sarah is leaving
- W(q=1): unknown parameter

## Later
- W @Nobody: the section ended
"""


def test_every_kind_is_parsed_with_lines_entities_day_and_values() -> None:
    facts, problems = parse_facts("memory/2026-11-20.md", DAILY)
    got = [
        (f.kind, f.content, f.entities, f.start_line, f.end_line, f.confidence, f.day)
        for f in facts
    ]
    assert got == [
        ("W", "Peter owns the billing service", ("Peter",), 7, 7, 0.0, "2026-11-20"),
        (
            "B",
            "shipped the bot (s=0.2 is only text)",
            ("Discord API", "warelay"),
            8,
            8,
            0.0,
            "2026-11-20",
        ),
        (
            "O",
            "prefers short written updates over meetings",
            ("Peter",),
            9,
            11,
            0.95,
            "2026-11-20",
        ),
        ("S", "a quiet week overall", (), 12, 12, 0.0, "2026-11-20"),
        ("B", "p95 dropped to 300ms @database", ("database",), 13, 13, 0.3, "2026-11-20"),
    ]
    assert facts[2].evidence == ("memory/2026-11-19.md#L3", "bank/world.md#L4-L6")
    assert facts[4].salience == 0.9
    assert facts[0].salience == estimate_salience("W", facts[0].content, ("Peter",))
    assert [str(p) for p in problems] == [
        "memory/2026-11-20.md:14: unknown kind 'X' (use W, B, O or S)",
        "memory/2026-11-20.md:15: confidence c=1.5 is outside [0, 1]",
        "memory/2026-11-20.md:16: no kind (start the bullet with W, B, O or S, e.g. "
        "'- W @Alice: ...')",
        "memory/2026-11-20.md:17: unknown parameter '(q=1)' "
        "(use c=0.9, s=0.8, by=assistant, session=ID or turn=3)",
    ]


def test_bank_pages_give_a_default_kind_and_entity() -> None:
    opinions, _ = parse_facts("bank/opinions.md", "# Opinions\n- @Alice: likes pairing\n")
    assert (opinions[0].kind, opinions[0].confidence, opinions[0].day) == ("O", 0.5, "")
    page, _ = parse_facts("bank/entities/Alice.md", "# Alice\n- joined in March\n- W: is tall\n")
    assert [(f.kind, f.entities) for f in page] == [("S", ("Alice",)), ("W", ("Alice",))]
    world, _ = parse_facts("bank/world.md", "- the sky is blue\n")
    assert world[0].kind == "W"


def test_a_daily_log_with_an_impossible_date_is_reported_and_undated() -> None:
    facts, problems = parse_facts("memory/2026-13-45.md", "## Retain\n- W: x\n")
    assert facts[0].day == ""
    assert str(problems[0]) == (
        "memory/2026-13-45.md:1: the file name is not a valid date (YYYY-MM-DD.md)"
    )


def test_fenced_code_and_other_sections_hold_no_facts() -> None:
    text = "## Retain\n```\n- W: in code\n```\n- W: real\n### Sub\n- W: nested\n## Next\n- W: no\n"
    facts, _ = parse_facts("notes.md", text)
    assert [f.content for f in facts] == ["real", "nested"]


def test_salience_estimate_is_deterministic_and_bounded() -> None:
    assert estimate_salience("W", "the sky", ()) == 0.5
    assert estimate_salience("W", "we decided to ship 3.2", ("team",)) == 0.8
    assert estimate_salience("S", "x", ()) == 0.4


def test_ids_survive_moves_and_edits_and_new_bullets_get_new_ids() -> None:
    v1 = "## Retain\n- W @a: alpha beta gamma\n- O(c=0.5) @b: delta\n- W: omega\n"
    first, nxt = assign_ids((), parse_facts("x.md", v1)[0], 1)
    assert [f.id for f in first] == ["f1", "f2", "f3"] and nxt == 4
    # moved, confidence edited, one bullet reworded, one removed, one added
    v2 = "## Retain\n- W: new one\n- O(c=0.7) @b: delta\n- W @a: alpha beta gamma delta\n"
    second, nxt = assign_ids(first, parse_facts("x.md", v2)[0], nxt)
    assert [(f.id, f.content) for f in second] == [
        ("f4", "new one"),
        ("f2", "delta"),
        ("f1", "alpha beta gamma delta"),
    ]
    assert second[1].confidence == 0.7 and nxt == 5


def _file(path: str, text: str) -> FileText:
    return FileText(path, text, str(hash(text)))


def test_diff_facts_records_changed_files_and_retires_removed_ones() -> None:
    a = _file("memory/2026-11-20.md", "## Retain\n- W: one\n")
    b = _file("notes.md", "no facts here\n")
    events, problems = diff_facts([a, b], {}, 1)
    assert [(e.path, [f.id for f in e.facts]) for e in events] == [("memory/2026-11-20.md", ["f1"])]
    prev = {a.path: PreviousFacts(a.content_hash, events[0].facts)}
    again, _ = diff_facts([a, b], prev, 2)
    assert again == [] and problems == []
    gone, _ = diff_facts([b], prev, 2)
    assert [(e.path, e.content_hash, e.facts) for e in gone] == [(a.path, "", ())]
    kept, _ = diff_facts([b], prev, 2, keep=frozenset({a.path}))
    assert kept == []


def test_format_bullet_round_trips_through_the_parser() -> None:
    bullet = format_bullet("O", "prefers tea", ["Peter", "Discord API"], confidence=0.8)
    assert bullet == "- O(c=0.8) @Peter @[Discord API]: prefers tea"
    (fact,), _ = parse_facts("memory/2026-11-22.md", "## Retain\n" + bullet + "\n")
    assert (fact.kind, fact.content, fact.entities, fact.confidence) == (
        "O",
        "prefers tea",
        ("Discord API", "Peter"),
        0.8,
    )


def test_retain_creates_a_daily_log() -> None:
    assert insert_retained(None, "- W: x", "2026-11-22") == (
        "# 2026-11-22\n\n## Retain\n- W: x\n",
        4,
    )


def test_retain_appends_a_section_without_touching_other_lines() -> None:
    before = "# 2026-11-22\n\nnotes without newline"
    after, line = insert_retained(before, "- B: y", "2026-11-22")
    assert after == "# 2026-11-22\n\nnotes without newline\n\n## Retain\n- B: y\n"
    assert line == 6


def test_retain_inserts_after_the_last_bullet_of_the_section() -> None:
    before = "# d\n\n## Retain\n- W: a\n  more\n\n## Other\n- z\n"
    after, line = insert_retained(before, "- B: y", "d")
    assert after == "# d\n\n## Retain\n- W: a\n  more\n- B: y\n\n## Other\n- z\n"
    assert line == 6
    crlf, _ = insert_retained(before.replace("\n", "\r\n"), "- B: y", "d")
    assert crlf == after.replace("\n", "\r\n")


@given(
    st.lists(st.text("abc xyz\n#-", max_size=30), max_size=6),
    st.text("abcdefgh ", min_size=1, max_size=20).filter(str.strip),
)
def test_retain_only_inserts_lines(lines: list[str], content: str) -> None:
    before = "\n".join(lines)
    bullet = format_bullet("W", content)
    after, line = insert_retained(before, bullet, "2026-11-22")
    new = after.splitlines()
    assert new[line - 1] == bullet
    old = before.splitlines() if before.strip() else []
    rest = new[: line - 1] + new[line:]
    # every old line is still there, in order, unchanged
    it = iter(rest)
    assert all(any(x == y for y in it) for x in old)
    facts, _ = parse_facts("memory/2026-11-22.md", after)
    assert any(f.start_line == line and f.content == " ".join(content.split()) for f in facts)


def test_values_may_trail_the_bullet_and_bank_history_holds_no_facts() -> None:
    text = "- W @Priya: tech lead. (s=0.9)\n- O(c=0.7): x (s=0.2, c=0.4)\n## History\n- @CI: old\n"
    facts, problems = parse_facts("bank/world.md", text)
    assert [(f.kind, f.content, f.salience, f.confidence) for f in facts] == [
        ("W", "tech lead.", 0.9, 0.0),
        ("O", "x", 0.2, 0.7),  # the head's value wins
    ]
    bad, problems = parse_facts("n.md", "## Retain\n- W: y (s=1.2)\n")
    assert bad == [] and str(problems[0]) == "n.md:2: salience s=1.2 is outside [0, 1]"


@given(
    speaker=st.sampled_from(["user", "assistant", "tool"]),
    session=st.text(max_size=40),
    turn=st.integers(0, 10_000),
    kind=st.sampled_from(["W", "B", "O", "S"]),
)
def test_who_said_a_fact_reads_back_from_its_bullet(
    speaker: str, session: str, turn: int, kind: str
) -> None:
    bullet = format_bullet(
        kind, "the deploy failed on a rate limit", ["deploy"],
        speaker=speaker, session=session, turn=turn,
    )  # fmt: skip
    facts, problems = parse_facts("memory/2026-11-20.md", f"## Retain\n{bullet}\n")
    assert problems == [] and len(facts) == 1
    f = facts[0]
    assert (f.speaker, f.session, f.turn) == (speaker, session, turn)
    assert (f.content, f.entities) == ("the deploy failed on a rate limit", ("deploy",))
    claim = CLAIM_CONFIDENCE if speaker == "assistant" else 0.5 if kind == "O" else 0.0
    assert f.confidence == claim
    if speaker == "user":
        assert "by=" not in bullet


def test_a_bad_provenance_is_reported_and_skipped() -> None:
    text = "## Retain\n- B(by=robot): x happened\n- B(turn=-1): y happened\n"
    facts, problems = parse_facts("memory/2026-11-20.md", text)
    assert facts == []
    assert [p.message for p in problems] == [
        "by=robot is not user, assistant or tool",
        "turn=-1 is not a whole number",
    ]
