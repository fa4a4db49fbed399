"""``ocb diff`` and ``ocb what-if`` through the CLI, on a real brain: JSON that agrees
with the library and the log, text with its header and tier lines, the real brain left
byte-identical, and bad input refused with one error and one hint line."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.whatif import diff
from ocb_events.clock import TickClock
from ocb_events.schema import STOP, EdgesUpdated, OutcomeRecorded
from replay import iso
from tests.ocb.support import ask_and_learn, tree_bytes

runner = CliRunner()
LEARNED_AT_NS = 1_800_000_000_000_000_000  # 2027-01-15T08:00:00Z; the sync ran in 2026
DIFF_KEYS = ["from", "to", "records", "threshold", "nodes", "edges", "tiers"]
WHAT_IF_KEYS = [
    "from_seq",
    "to_seq",
    "overrides",
    "replay",
    "threshold",
    "edges",
    "tiers",
    "queries",
]
EDGE_COUNTS = ["added", "removed", "changed", "within", "stops"]
EDGE_KEYS = ["source", "target", "change", "before", "after", "delta", "tier_before", "tier_after"]


def invoke(*args: object) -> Result:
    return runner.invoke(app, [str(a) for a in args], prog_name="ocb")


def ocb(*args: object) -> tuple[int, str, str]:
    res = invoke(*args)
    return res.exit_code, res.stdout, res.stderr


@dataclass(frozen=True)
class History:
    """A closed brain: synced at ``synced``, rewarded up to ``rewarded``, then punished
    up to ``end``."""

    path: Path
    synced: int
    rewarded: int
    end: int


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory, example_brain: Path) -> History:
    """One brain for the whole module: every test here only reads it (the what-if and
    bad-input tests check that it stays byte-identical)."""
    path = tmp_path_factory.mktemp("cli-whatif") / "brain"
    shutil.copytree(example_brain, path)
    with Brain(path, clock=TickClock(start_ns=LEARNED_AT_NS)) as b:
        synced = b.log.last_seq
        ask_and_learn(b, 4)
        rewarded = b.log.last_seq
        ask_and_learn(b, 2, reward=-1.0)
        end = b.log.last_seq
    return History(path, synced, rewarded, end)


# --------------------------------------------------------------------------- diff


def test_diff_json_agrees_with_the_library_and_the_updates_in_between(history: History) -> None:
    h = history
    code, out, err = ocb(
        "diff", "--brain", h.path, "--from", h.synced, "--to", h.rewarded, "--top", 10_000, "--json"
    )
    assert (code, err) == (0, "")
    got = json.loads(out)
    with Brain(h.path, writer=False) as b:
        report = diff(b.store, h.synced, h.rewarded, top=10_000)
        times = [iso(b.log.ts_of(s)) for s in (h.synced, h.rewarded)]
        named = {
            (d.source, d.target)
            for rec in b.log.read(h.synced + 1, h.rewarded)
            if isinstance(rec.event, EdgesUpdated)
            for d in rec.event.deltas
        }
    g = report.graph
    assert list(got) == DIFF_KEYS
    assert got["from"] == {"seq": h.synced, "time": times[0]}
    assert got["to"] == {"seq": h.rewarded, "time": times[1]}
    assert (got["records"], got["threshold"]) == (h.rewarded - h.synced, 0.0)
    assert got["nodes"] == {"added": 0, "removed": 0, "changed": 0, "top": []}
    edges = got["edges"]
    assert list(edges) == [*EDGE_COUNTS, "top"]
    assert (edges["added"], edges["removed"], edges["within"]) == (0, 0, 0)
    assert edges["changed"] == g.edges_changed == sum(t != STOP for _, t in named) > 0
    assert edges["stops"] == g.stops_changed == sum(t == STOP for _, t in named)
    top = edges["top"]
    assert all(list(e) == EDGE_KEYS for e in top)
    assert {(e["source"], e["target"]) for e in top} == named
    assert [(e["source"], e["target"], e["before"], e["after"]) for e in top] == [
        (c.source, c.target, c.before, c.after) for c in g.edges
    ]
    assert all(e["delta"] == pytest.approx(e["after"] - e["before"]) for e in top)
    sizes = [abs(e["delta"]) for e in top]
    assert sizes == sorted(sizes, reverse=True)
    assert got["tiers"] == {
        "from": g.tiers_before,
        "to": g.tiers_after,
        "transitions": g.transitions,
    }


def test_diff_threshold_and_top_trim_the_list_but_count_everything(history: History) -> None:
    h = history
    span = ("diff", "--brain", h.path, "--from", h.synced, "--to", h.rewarded, "--json")
    top = json.loads(ocb(*span, "--top", 10_000)[1])["edges"]["top"]
    code, out, _ = ocb(*span, "--top", 5, "--threshold", 0.05)
    small = json.loads(out)["edges"]
    over = [e for e in top if abs(e["delta"]) > 0.05]
    assert code == 0 and small["top"] == over[:5]
    assert small["changed"] + small["stops"] == len(over) > 5
    assert small["within"] == len(top) - len(over)


def test_diff_points_default_to_the_end_and_may_be_times_or_zero(history: History) -> None:
    h = history
    code, out, _ = ocb("diff", "--brain", h.path, "--from", "2026-06-01T00:00", "--json")
    got = json.loads(out)
    assert code == 0 and (got["from"]["seq"], got["to"]["seq"]) == (h.synced, h.end)
    assert got["from"]["time"] == "2026-01-01T00:00:00Z"
    assert got["to"]["time"] == "2027-01-15T08:00:00Z"
    code, out, _ = ocb("diff", "--brain", h.path, "--from", 0, "--to", h.synced, "--json")
    whole = json.loads(out)
    assert code == 0 and whole["from"] == {"seq": 0, "time": ""}
    assert whole["tiers"]["from"] == dict.fromkeys(
        ["reflex", "habitual", "dormant", "inhibitory"], 0
    )
    with Brain(h.path, writer=False, as_of=h.synced) as b:
        assert whole["nodes"]["added"] == len(b.graph.nodes)
        assert whole["edges"]["added"] == b.graph.edge_count() == sum(whole["tiers"]["to"].values())


def test_diff_text_has_the_header_counts_and_tier_lines(history: History) -> None:
    h = history
    args = ("diff", "--brain", h.path, "--from", h.synced, "--to", h.rewarded)
    code, out, err = ocb(*args)
    assert (code, err) == (0, "")
    got = json.loads(ocb(*args, "--json")[1])
    e, t = got["edges"], got["tiers"]
    lines = out.splitlines()
    assert lines[:4] == [
        f"seq {h.synced} (2026-01-01T00:00:00Z) -> seq {h.rewarded} (2027-01-15T08:00:00Z): "
        f"{h.rewarded - h.synced} record(s)",
        "nodes: +0 added, -0 removed, 0 changed",
        f"edges: +0 added, -0 removed, {e['changed']} changed by more than 0 (0 by less), "
        f"{e['stops']} stop weight(s) changed",
        "tiers: " + ", ".join(f"{k} {t['from'][k]} -> {t['to'][k]}" for k in t["from"]),
    ]
    listed = lines[lines.index("largest edge changes:") + 1 :]
    assert len(listed) == 20 and all(" -> " in x for x in listed)


# --------------------------------------------------------------------------- what-if


def counts(path: Path) -> tuple[int, int]:
    """The outcomes in a brain's log, and the learning updates recorded for them."""
    with Brain(path, writer=False) as b:
        recs = list(b.log.read())
    outcomes = sum(isinstance(r.event, OutcomeRecorded) for r in recs)
    updates = sum(isinstance(r.event, EdgesUpdated) and r.event.rule == "pg" for r in recs)
    return outcomes, updates


def test_what_if_with_no_overrides_reproduces_the_brain_and_leaves_it_alone(
    history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = history
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = tree_bytes(h.path)
    outcomes, updates = counts(h.path)
    code, out, err = ocb("what-if", "--brain", h.path, "--json")
    assert (code, err) == (0, "")
    same = json.loads(out)
    assert list(same) == WHAT_IF_KEYS
    assert (same["from_seq"], same["to_seq"], same["overrides"]) == (0, h.end, {})
    r = same["replay"]
    assert (r["records"], r["outcomes"], r["replaced"], r["maintenance"]) == (
        h.end,
        outcomes,
        updates,
        0,
    )
    assert r["copied"] + r["outcomes"] + r["replaced"] == h.end
    assert same["edges"] == dict.fromkeys(EDGE_COUNTS, 0) | {"top": []}
    assert same["tiers"]["real"] == same["tiers"]["what_if"] and same["tiers"]["transitions"] == {}
    q = same["queries"]
    assert (q["count"], q["changed"], q["top"]) == (3, 0, [])
    assert q["real"] == q["what_if"] and q["real"]["mean_fired"] > 0
    assert tree_bytes(h.path) == before
    with Brain(h.path, writer=False) as b:
        assert b.log.last_seq == h.end
    assert list(scratch.iterdir()) == []  # the scratch brain is gone


def test_what_if_with_overrides_moves_weights_and_echoes_them(history: History) -> None:
    h = history
    before = tree_bytes(h.path)
    outcomes, _ = counts(h.path)
    given = ("--from", h.synced, "--rule", "heuristic", "--eta", "0.5", "--top", 3, "--queries", 2)
    code, out, err = ocb("what-if", "--brain", h.path, *given, "--json")
    assert (code, err) == (0, "")
    other = json.loads(out)
    assert (other["from_seq"], other["to_seq"]) == (h.synced, h.end)
    assert other["overrides"] == {"rule": "heuristic", "eta": 0.5}
    assert other["replay"]["outcomes"] == outcomes
    assert other["edges"]["changed"] > 0 and len(other["edges"]["top"]) == 3
    assert all(list(x) == EDGE_KEYS for x in other["edges"]["top"])
    assert other["tiers"]["real"] != other["tiers"]["what_if"]
    assert other["queries"]["count"] == 2
    code, out, _ = ocb("what-if", "--brain", h.path, "--rule", "heuristic", "--eta", "0.5")
    assert code == 0 and out.startswith(
        f"what-if from seq 0 to {h.end} with rule=heuristic, eta=0.5: {outcomes} outcome(s) "
    )
    assert "\nweights: " in out and "\ntiers (real -> what-if): reflex " in out
    assert tree_bytes(h.path) == before
    with Brain(h.path, writer=False) as b:
        assert b.log.last_seq == h.end


# --------------------------------------------------------------------------- bad input

OUTSIDE = (
    "valid: seq 1 to {end}, or a time from 2026-01-01T00:00:00Z to 2027-01-15T08:00:00Z"
    " (0: before the first record)"
)
NOT_A_TIME = (
    "give a seq (1200) or a time (2026-11-03T10:00, UTC unless it has a zone)"
    " (0: before the first record)"
)
BAD: list[tuple[str, str, str]] = [
    ("diff --from {beyond}", "--from {beyond} is outside the history", OUTSIDE),
    ("diff --from 1 --to {beyond}", "--to {beyond} is outside the history", OUTSIDE),
    ("what-if --from {beyond}", "--from {beyond} is outside the history", OUTSIDE),
    ("diff --from yesterday", "--from 'yesterday' is neither a seq nor an ISO time", NOT_A_TIME),
    ("what-if --from yesterday", "--from 'yesterday' is neither a seq nor an ISO time", NOT_A_TIME),
    (
        "diff --from {end} --to {synced}",
        "--from {end} is after --to {synced}",
        "give the earlier point as --from",
    ),
    (
        "what-if --rule magic",
        "unknown learning rule 'magic'",
        "use one of: transfer, route, pg, heuristic",
    ),
    (
        "what-if --eta -0.5",
        "learning.eta must be at least 0, got -0.5",
        "give a value at least 0, e.g. 0.1 (the default)",
    ),
    ("diff --from 1 --top 0", "--top must be at least 1, got 0", "pass --top 20"),
    ("what-if --top 0", "--top must be at least 1, got 0", "pass --top 20"),
    ("what-if --queries -1", "--queries must be at least 0, got -1", "pass --queries 50"),
    (
        "diff --from 1 --threshold -1",
        "--threshold must be at least 0, got -1.0",
        "pass --threshold 0.05",
    ),
]


@pytest.mark.parametrize(("command", "error", "hint"), BAD, ids=[c[0] for c in BAD])
def test_bad_input_gives_one_error_and_one_hint_and_changes_nothing(
    history: History, command: str, error: str, hint: str
) -> None:
    h = history
    names = {"end": h.end, "beyond": h.end + 1, "synced": h.synced}
    before = tree_bytes(h.path)
    res = invoke(*command.format(**names).split(), "--brain", h.path)
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit)  # no traceback
    assert res.stdout == ""
    assert res.stderr.splitlines() == [
        "error: " + error.format(**names),
        "hint: " + hint.format(**names),
    ]
    assert tree_bytes(h.path) == before


@pytest.mark.parametrize("command", [["diff", "--from", "1"], ["what-if"]], ids=["diff", "what-if"])
def test_a_missing_brain_is_refused_and_not_created(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nowhere"
    res = invoke(*command, "--brain", missing)
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit)
    assert res.stderr.splitlines() == [
        f"error: no brain at {missing}",
        f"hint: create one with: ocb init --workspace DIR --brain {missing}",
    ]
    assert not missing.exists()


# --------------------------------------------------------------------------- help


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("diff", ["--from", "--to", "--threshold", "--top", "--json"]),
        ("what-if", ["--from", "--rule", "--eta", "--gamma", "--baseline-rate", "--queries"]),
    ],
)
def test_help_shows_every_option_and_an_example(command: str, options: list[str]) -> None:
    code, out, _ = ocb(command, "--help")
    assert code == 0 and all(o in out for o in options)
    example = out.split("Example:")[1]
    assert f"ocb {command} --brain " in example and "--json" in example


def test_diff_without_a_from_point_is_a_usage_error(history: History) -> None:
    code, _, err = ocb("diff", "--brain", history.path)
    assert code == 2 and "Missing option '--from'" in err
