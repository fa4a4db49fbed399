"""``ocb retract`` and corrections on the command line: outputs, refusals, the history
after a retraction, ``inject --all``, and the demo."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.golden_files import check
from tests.ocb.cli.support import QUESTION, log_bytes, ocb, one_error
from tests.ocb.support import EXAMPLE

HOTFIX = "can we skip CI for an urgent hotfix"


def test_retract_reports_what_it_reversed_and_the_history_keeps_both(cli_brain: Path) -> None:
    ocb("query", QUESTION, "--brain", cli_brain, "--chat-id", "c1")
    learn = ["learn", "--brain", cli_brain, "--chat-id", "c1", "--outcome", "1", "--rule", "pg"]
    code, out, _ = ocb(*learn, "--json")
    learned = json.loads(out)
    before = log_bytes(cli_brain)
    code, out, err = ocb("retract", "--brain", cli_brain, "--chat-id", "c1", "--dry-run")
    assert (code, err) == (0, "") and log_bytes(cli_brain) == before
    head = "would retract (dry run, nothing recorded) the outcome +1 (human) of trace t44"
    assert out.startswith(f"{head} (seq {learned['outcome_seq']}): ")
    args = ["retract", "--brain", cli_brain, "--chat-id", "c1", "--reason", "wrong chat", "--json"]
    code, out, err = ocb(*args)
    assert (code, err) == (0, "")
    got = json.loads(out)
    assert list(got) == [
        "seq", "recorded", "target", "reason", "weights", "baselines", "relevance", "removed",
        "skipped", "credits",
    ]  # fmt: skip
    assert got["target"] == {
        "seq": learned["outcome_seq"],
        "kind": "outcome",
        "detail": "outcome +1 (human) of trace t44",
    }
    assert got["recorded"] and got["reason"] == "wrong chat" and got["removed"]["edges"] == []
    assert len(got["weights"]) == len(learned["deltas"])
    assert all(list(w) == ["source", "target", "before", "after"] for w in got["weights"])
    code, _, err = ocb("retract", "--brain", cli_brain, "--chat-id", "c1")
    assert code == 1
    one_error(err, r"error: chat c1 has no outcome left to retract")
    code, out, _ = ocb("events", "--brain", cli_brain, "--type", "retracted")
    assert [json.loads(line)["event"]["target_seq"] for line in out.splitlines()] == [
        learned["outcome_seq"]
    ]
    assert ocb("replay", "--brain", cli_brain, "--verify")[0] == 0
    code, out, _ = ocb("sql", "--brain", cli_brain, "--json", "SELECT DISTINCT rule FROM deltas")
    assert {"pg", "retract"} <= {r["rule"] for r in json.loads(out)}


def test_a_correction_lists_what_it_vetoed_and_all_vetoes_everything(cli_brain: Path) -> None:
    ocb("query", HOTFIX, "--brain", cli_brain, "--chat-id", "c1")
    fix = ["inject", "--brain", cli_brain, "--type", "CORRECTION", "--chat-id", "c1"]
    code, out, _ = ocb(*fix, "--content", "Never skip CI for hotfixes")
    assert code == 0
    check("cli/inject.txt", out)
    code, out, _ = ocb(*fix, "--content", "Hotfixes never skip CI", "--all", "--json")
    got = json.loads(out)
    assert got["selection"] == "all" and got["spared"] == []
    assert [c["id"] for c in got["vetoed"]][:1] == ["memory/2026-11-11.md::4"]
    assert all(list(c) == ["id", "source"] for c in got["vetoed"])
    code, out, _ = ocb("retract", "--brain", cli_brain, "--node", got["node_id"])
    assert code == 0 and out.startswith(f"retracted the CORRECTION {got['node_id']}: ")
    assert ocb("replay", "--brain", cli_brain, "--verify")[0] == 0


BAD: list[tuple[list[str], str]] = [
    (["inject", "--content", "x", "--type", "CORRECTION"], r"error: a CORRECTION must say what"),
    (["inject", "--content", "x", "--all"], r"error: --all vetoes every chunk"),
    (["retract"], r"error: retract needs exactly one of --seq, --node, --trace or --chat-id"),
    (["retract", "--seq", "44"], r"error: the record at seq 44 \(query_traced\) cannot be"),
    (["retract", "--seq", "999"], r"error: no record at seq 999: the history holds 1 to 44"),
    (["retract", "--trace", "t44"], r"error: trace t44 has no outcome left to retract"),
    (["retract", "--node", "correction::1"], r"error: unknown injected node 'correction::1'"),
]


def test_bad_corrections_and_retractions_are_one_error_and_record_nothing(
    cli_brain: Path,
) -> None:
    ocb("query", QUESTION, "--brain", cli_brain)  # t44 exists
    before = log_bytes(cli_brain)
    for args, pattern in BAD:
        code, out, err = ocb(*args, "--brain", cli_brain)
        assert code == 1 and out == "", args
        one_error(err, pattern)
    assert log_bytes(cli_brain) == before


def test_the_demo_still_corrects_the_withdrawn_advice(tmp_path: Path) -> None:
    workspace = EXAMPLE
    code, out, _ = ocb("demo", "--workspace", workspace, "--brain", tmp_path / "demo")
    assert code == 0
    stale = re.search(r"(memory/2026-11-10\.md::\d+) is the withdrawn advice", out)
    assert stale is not None, out
    assert f"{stale[1]} no longer fires for this question" in out
