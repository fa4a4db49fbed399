"""Current facts (``ocb.memory.kg`` and ``ocb kg``): the latest value wins and the history
stays, time travel shows the value of its time, stale facts carry a caveat, other
sources' recent values are flagged as conflicts, and bad input is one error and one
hint line that records nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.memory.kg import check_source, kg_get, kg_history, kg_set
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from projections import kg
from replay import rebuild
from tests.golden_files import check

runner = CliRunner()
T0 = 1_800_000_000_000_000_000  # 2027-01-15T08:00:00Z; the sync ran in 2026
DAY = 86_400 * 1_000_000_000
LINK = "memory/2026-11-20.md#L14"
DOCS = "docs/discord.md#L3"


def ocb(*args: object) -> tuple[int, str, str]:
    r = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture
def clock() -> TickClock:
    """A clock that stands still until a test moves it."""
    return TickClock(start_ns=T0, step_ns=0)


@pytest.fixture
def kb(built: Path, clock: TickClock) -> Iterator[Brain]:
    with Brain(built, clock=clock) as b:
        yield b


def discord(b: Brain, clock: TickClock) -> int:
    """60/min from the docs, a day later 100/min from a daily note, a day later the
    owner; returns the seq before them."""
    base = b.log.last_seq
    kg_set(b.store, "Discord API", "rate_limit", "60/min", source=DOCS)
    clock.advance(DAY)
    kg_set(b.store, "Discord API", "rate_limit", "100/min", source=LINK)
    clock.advance(DAY)
    kg_set(b.store, "Discord API", "owner", "Alice", source="standup")
    return base


# --------------------------------------------------------------------------- library


def test_the_latest_value_wins_and_older_values_stay_in_history(
    kb: Brain, clock: TickClock
) -> None:
    base = kb.log.last_seq
    first = kg_set(kb.store, "Discord API", "rate_limit", "60/min", source=DOCS)
    assert (first.changed, first.previous, first.seq) == (True, None, base + 1)
    clock.advance(DAY)
    second = kg_set(kb.store, "Discord API", "rate_limit", " 100/min ", source=LINK)
    assert (second.value, second.changed, second.previous) == ("100/min", True, "60/min")
    assert second.time == "2027-01-16T08:00:00Z"
    view = kg_get(kb.store, "Discord API")
    [fact] = view.facts
    assert (fact.value, fact.source, fact.seq) == ("100/min", LINK, base + 2)
    hist = kg_history(kb.store, "Discord API", "rate_limit")
    assert [(s.value, s.source, s.seq) for s in hist.predicates[0].statements] == [
        ("60/min", DOCS, base + 1),
        ("100/min", LINK, base + 2),
    ]
    assert hist.predicates[0].statements[0].time == "2027-01-15T08:00:00Z"


def test_the_same_value_again_is_recorded_as_a_reverification(kb: Brain, clock: TickClock) -> None:
    kg_set(kb.store, "Discord API", "rate_limit", "100/min", source=LINK)
    clock.advance(5 * DAY)
    again = kg_set(kb.store, "Discord API", "rate_limit", "100/min", source=LINK)
    assert (again.changed, again.previous, again.seq) == (False, "100/min", kb.log.last_seq)
    [fact] = kg_get(kb.store, "Discord API").facts
    assert (fact.since, fact.verified) == ("2027-01-15T08:00:00Z", "2027-01-20T08:00:00Z")
    assert fact.age_days == 0.0 and fact.conflicts == []
    assert len(kg_history(kb.store, "Discord API").predicates[0].statements) == 2


def test_matching_is_case_insensitive_and_predicates_are_sorted(
    kb: Brain, clock: TickClock
) -> None:
    discord(kb, clock)
    view = kg_get(kb.store, "  discord API ")
    assert view.subject == "Discord API"
    assert [f.predicate for f in view.facts] == ["owner", "rate_limit"]
    assert [f.value for f in kg_get(kb.store, "DISCORD api", "RATE_LIMIT").facts] == ["100/min"]
    assert [p.predicate for p in kg_history(kb.store, "discord api").predicates] == [
        "owner",
        "rate_limit",
    ]


def test_time_travel_shows_the_value_of_that_time(built: Path, clock: TickClock) -> None:
    with Brain(built, clock=clock) as b:
        base = discord(b, clock)
    with Brain(built, as_of=base + 1) as past:
        view = kg_get(past.store, "Discord API")
        assert [(f.predicate, f.value) for f in view.facts] == [("rate_limit", "60/min")]
        assert (view.seq, view.now) == (base + 1, "2027-01-15T08:00:00Z")
        assert len(kg_history(past.store, "Discord API").predicates[0].statements) == 1
        with pytest.raises(InputError, match="records nothing"):
            kg_set(past.store, "Discord API", "rate_limit", "1/min")
    with Brain(built, as_of="2027-01-16T09:00") as past:
        assert [f.value for f in kg_get(past.store, "Discord API").facts] == ["100/min"]
    with Brain(built, as_of=base) as before:
        with pytest.raises(InputError, match="unknown subject 'Discord API'"):
            kg_get(before.store, "Discord API")


def test_a_fact_is_stale_after_30_days_and_not_before(kb: Brain, clock: TickClock) -> None:
    kg_set(kb.store, "Discord API", "rate_limit", "100/min", source=LINK)
    clock.advance(30 * DAY)
    [fact] = kg_get(kb.store, "Discord API").facts
    assert (fact.age_days, fact.stale, fact.caveat) == (30.0, False, None)
    clock.advance(10 * DAY)
    [fact] = kg_get(kb.store, "Discord API").facts
    assert (fact.age_days, fact.stale, fact.caveat) == (40.0, True, "last verified 40 days ago")
    kg_set(kb.store, "Discord API", "rate_limit", "100/min", source=LINK)  # verified again
    [fact] = kg_get(kb.store, "Discord API").facts
    assert (fact.stale, fact.since, fact.verified) == (
        False,
        "2027-01-15T08:00:00Z",
        "2027-02-24T08:00:00Z",
    )


def test_a_recorded_stale_days_is_honoured(kb: Brain, clock: TickClock) -> None:
    kg_set(kb.store, "Discord API", "rate_limit", "100/min", source=LINK)
    clock.advance(11 * DAY)
    assert kg_get(kb.store, "Discord API").facts[0].stale is False
    kb.set_config("memory.stale_days", 10)
    view = kg_get(kb.store, "Discord API")
    assert view.stale_days == 10.0
    assert view.facts[0].caveat == "last verified 11 days ago"


def test_a_view_of_the_past_measures_age_at_its_own_time(built: Path, clock: TickClock) -> None:
    with Brain(built, clock=clock) as b:
        kg_set(b.store, "Discord API", "rate_limit", "100/min", source=LINK)
        clock.advance(40 * DAY)
        kg_set(b.store, "Discord API", "owner", "Alice")
        point = b.log.last_seq
        clock.advance(400 * DAY)
        kg_set(b.store, "Discord API", "owner", "Bob")
    with Brain(built, as_of=point) as past:
        facts = {f.predicate: f for f in kg_get(past.store, "Discord API").facts}
    assert facts["owner"].value == "Alice" and facts["owner"].age_days == 0.0
    assert facts["rate_limit"].caveat == "last verified 40 days ago"


def test_other_sources_recent_values_are_conflicts(kb: Brain, clock: TickClock) -> None:
    base = discord(kb, clock)
    rate = kg_get(kb.store, "Discord API", "rate_limit").facts[0]
    assert [(c.value, c.source, c.time, c.seq) for c in rate.conflicts] == [
        ("60/min", DOCS, "2027-01-15T08:00:00Z", base + 1)
    ]
    # the same source updating its own value is no conflict
    kg_set(kb.store, "Discord API", "owner", "Bob", source="standup")
    assert kg_get(kb.store, "Discord API", "owner").facts[0].conflicts == []
    # a source that moved to the current value no longer conflicts
    kg_set(kb.store, "Discord API", "rate_limit", "100/min", source=DOCS)
    assert kg_get(kb.store, "Discord API", "rate_limit").facts[0].conflicts == []


def test_conflicts_older_than_the_window_are_not_flagged(kb: Brain, clock: TickClock) -> None:
    kg_set(kb.store, "Discord API", "rate_limit", "60/min", source=DOCS)
    clock.advance(31 * DAY)
    kg_set(kb.store, "Discord API", "rate_limit", "100/min", source=LINK)
    assert kg_get(kb.store, "Discord API").facts[0].conflicts == []
    kb.set_config("memory.stale_days", 45)
    assert [c.value for c in kg_get(kb.store, "Discord API").facts[0].conflicts] == ["60/min"]


def test_unknown_subjects_and_predicates_suggest_close_names(kb: Brain, clock: TickClock) -> None:
    with pytest.raises(InputError, match="unknown subject 'Discord API'") as empty:
        kg_get(kb.store, "Discord API")
    assert empty.value.hint.startswith("no facts yet; state one: ocb kg set")
    discord(kb, clock)
    with pytest.raises(InputError, match="unknown subject 'discrod api'") as typo:
        kg_get(kb.store, "discrod api")
    assert typo.value.hint == "did you mean Discord API?"
    with pytest.raises(InputError) as far:
        kg_history(kb.store, "Slack")
    assert far.value.hint == "known subjects: Discord API"
    with pytest.raises(InputError, match="unknown predicate 'rate_limt' of 'Discord API'") as p:
        kg_get(kb.store, "Discord API", "rate_limt")
    assert p.value.hint == "did you mean rate_limit?"
    with pytest.raises(InputError) as none_close:
        kg_get(kb.store, "Discord API", "colour")
    assert none_close.value.hint == "Discord API has: owner, rate_limit"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("Discord API", "rate_limit", "  "), "the value is empty"),
        (("", "rate_limit", "1"), "the subject is empty"),
        (("Discord API", "", "1"), "the predicate is empty"),
        (("Discord API", "rate_limit", "1\n2"), "the value must be one line of text"),
        (("Discord\nAPI", "rate_limit", "1"), "the subject must be one line of text"),
        (("Discord API", "rate_limit", "1", "a.md#14"), "is not a file link"),
        (("Discord API", "rate_limit", "1", "a.md#L0"), "is not a file link"),
        (("Discord API", "rate_limit", "1", "a.md#L20-L12"), "is not a file link"),
        (("Discord API", "rate_limit", "1", "a.md#L2-"), "is not a file link"),
    ],
)
def test_bad_input_is_refused_and_records_nothing(
    kb: Brain, args: tuple[str, ...], message: str
) -> None:
    before = kb.log.last_seq
    with pytest.raises(InputError, match=message) as exc:
        kg_set(kb.store, *args)
    assert exc.value.hint
    assert kb.log.last_seq == before


@pytest.mark.parametrize(
    "source", ["", "standup 2026-11-21", "a.md", "a.md#L2", "a/b c.md#L2-L9", "ticket #123"]
)
def test_sources_may_be_free_text_or_file_links(source: str) -> None:
    assert check_source(f" {source} ") == source


def test_replay_rebuilds_the_live_state(kb: Brain, clock: TickClock) -> None:
    discord(kb, clock)
    kg_set(kb.store, "discord api", "Owner", "Bob")
    live = kg.snapshot(kb.state("kg"))
    assert kg.snapshot(rebuild(kb.log, ["kg"])["kg"]) == live
    assert kg_get(kb.store, "Discord API").subject == "discord api"  # the latest spelling


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def facts(built: Path, clock: TickClock) -> tuple[Path, int]:
    """The brain with the Discord facts, and the seq before them."""
    with Brain(built, clock=clock) as b:
        return built, discord(b, clock)


def test_cli_get_prints_current_facts_as_text_and_json(facts: tuple[Path, int]) -> None:
    path, base = facts
    code, out, err = ocb("kg", "get", "discord api", "--brain", path, "--as-of", base + 3)
    assert (code, err) == (0, "")
    assert out == (
        f"Discord API (at seq {base + 3}, 2027-01-17T08:00:00Z)\n"
        "  owner = Alice [standup]\n"
        "    verified 2027-01-17T08:00:00Z (0 days ago)\n"
        f"  rate_limit = 100/min [{LINK}]\n"
        "    verified 2027-01-16T08:00:00Z (1 day ago)\n"
        f"    conflict: 60/min from {DOCS} at 2027-01-15T08:00:00Z (seq {base + 1})\n"
    )
    code, out, _ = ocb(
        "kg", "get", "Discord API", "rate_limit", "--brain", path, "--as-of", base + 3, "--json"
    )
    assert code == 0
    assert json.loads(out) == {
        "subject": "Discord API",
        "seq": base + 3,
        "now": "2027-01-17T08:00:00Z",
        "stale_days": 30.0,
        "facts": [
            {
                "predicate": "rate_limit",
                "value": "100/min",
                "source": LINK,
                "seq": base + 2,
                "since": "2027-01-16T08:00:00Z",
                "verified": "2027-01-16T08:00:00Z",
                "age_days": 1.0,
                "stale": False,
                "caveat": None,
                "conflicts": [
                    {
                        "value": "60/min",
                        "source": DOCS,
                        "time": "2027-01-15T08:00:00Z",
                        "seq": base + 1,
                    }
                ],
            }
        ],
    }


def test_cli_get_shows_the_stale_caveat(built: Path, clock: TickClock) -> None:
    with Brain(built, clock=clock) as b:
        kg_set(b.store, "Discord API", "rate_limit", "100/min")
        clock.advance(45 * DAY)
        kg_set(b.store, "Slack", "owner", "Bob")
        end = b.log.last_seq
    code, out, _ = ocb("kg", "get", "Discord API", "--brain", built, "--as-of", end)
    assert code == 0
    assert out.splitlines()[1:] == [
        "  rate_limit = 100/min",
        "    verified 2027-01-15T08:00:00Z (45 days ago)",
        "    caveat: last verified 45 days ago",
    ]


def test_cli_history_lists_every_statement(facts: tuple[Path, int]) -> None:
    path, base = facts
    code, out, _ = ocb("kg", "history", "Discord API", "--brain", path)
    assert code == 0
    assert out == (
        f"Discord API (up to seq {base + 3})\n"
        "  owner:\n"
        f"    seq {base + 3} 2027-01-17T08:00:00Z  Alice [standup]\n"
        "  rate_limit:\n"
        f"    seq {base + 1} 2027-01-15T08:00:00Z  60/min [{DOCS}]\n"
        f"    seq {base + 2} 2027-01-16T08:00:00Z  100/min [{LINK}]\n"
    )
    code, out, _ = ocb(
        "kg", "history", "Discord API", "rate_limit", "--brain", path, "--as-of", base + 1
    )
    assert (code, out.splitlines()[0]) == (0, f"Discord API (up to seq {base + 1})")
    code, out, _ = ocb(
        "kg", "history", "discord api", "rate_limit", "--brain", path, "--as-of", base + 1, "--json"
    )
    assert json.loads(out) == {
        "subject": "Discord API",
        "seq": base + 1,
        "predicates": [
            {
                "predicate": "rate_limit",
                "statements": [
                    {
                        "value": "60/min",
                        "source": DOCS,
                        "time": "2027-01-15T08:00:00Z",
                        "seq": base + 1,
                    }
                ],
            }
        ],
    }


def test_cli_set_records_and_reports_the_change(facts: tuple[Path, int]) -> None:
    path, base = facts
    code, out, err = ocb("kg", "set", "Discord API", "rate_limit", "120/min", "--brain", path)
    assert (code, err) == (0, "")
    assert out == f"Discord API rate_limit = 120/min (was 100/min) at seq {base + 4}\n"
    args = ("kg", "set", "Discord API", "rate_limit", "120/min", "--source", LINK, "--brain", path)
    code, out, _ = ocb(*args, "--json")
    got = json.loads(out)
    assert code == 0 and list(got) == [
        "subject",
        "predicate",
        "value",
        "source",
        "seq",
        "time",
        "changed",
        "previous",
    ]
    assert (got["seq"], got["changed"], got["previous"], got["source"]) == (
        base + 5,
        False,
        "120/min",
        LINK,
    )
    code, out, _ = ocb(*args)
    assert out == (
        f"Discord API rate_limit = 120/min from {LINK} (unchanged; re-verified) at seq {base + 6}\n"
    )
    code, out, _ = ocb("kg", "set", "Slack", "seats", "-5", "--brain", path)
    assert (code, out) == (0, f"Slack seats = -5 (new fact) at seq {base + 7}\n")
    with Brain(path, writer=False) as b:
        assert b.log.last_seq == base + 7
        assert [f.value for f in kg_get(b.store, "Discord API", "rate_limit").facts] == ["120/min"]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["set", "Discord API", "rate_limit", ""], "error: the value is empty"),
        (
            ["set", "Discord API", "rate_limit", "1/s", "--source", "notes.md#14"],
            "error: source 'notes.md#14' is not a file link of the form path#L12 or path#L12-L20",
        ),
        (["get", "Discrod API"], "error: unknown subject 'Discrod API'"),
        (["get", "Discord API", "rate"], "error: unknown predicate 'rate' of 'Discord API'"),
        (["history", "Slack"], "error: unknown subject 'Slack'"),
    ],
)
def test_cli_bad_input_is_one_error_and_one_hint_and_records_nothing(
    facts: tuple[Path, int], args: list[str], error: str
) -> None:
    path, base = facts
    code, out, err = ocb("kg", *args, "--brain", path)
    lines = err.splitlines()
    assert code == 1 and out == "" and "Traceback" not in err
    assert len(lines) == 2 and lines[0] == error and lines[1].startswith("hint: ")
    with Brain(path, writer=False) as b:
        assert b.log.last_seq == base + 3


def test_cli_usage_errors_exit_2(facts: tuple[Path, int]) -> None:
    path, _ = facts
    code, _, err = ocb("kg", "set", "Discord API", "rate_limit", "--brain", path)
    assert code == 2 and "Missing argument" in err
    code, _, _ = ocb("kg", "set", "Discord API", "rate_limit", "1", "--as-of", "3", "--brain", path)
    assert code == 2


KG_COMMANDS = ["get", "history", "set"]


@pytest.mark.parametrize("command", KG_COMMANDS)
def test_kg_commands_have_help_with_an_example(command: str) -> None:
    code, out, _ = ocb("kg", command, "--help")
    assert code == 0
    assert "Example:" in out and f"ocb kg {command}" in out.split("Example:")[1]
    check(f"cli/help-kg-{command}.txt", out)


def test_kg_help_lists_its_commands() -> None:
    code, out, _ = ocb("kg", "--help")
    assert code == 0 and all(c in out for c in KG_COMMANDS)
    check("cli/help-kg.txt", out)
