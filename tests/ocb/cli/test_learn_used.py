"""``ocb learn --used`` on the command line: the route keeps what the answer used, the
text and JSON say which route changed, and ids that did not fire are refused in one
line with nothing recorded."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ocb.cli.support import QUESTION, log_bytes, ocb, one_error


def test_learn_with_used_ids_compiles_the_route_and_reports_it(cli_brain: Path) -> None:
    code, out, _ = ocb("query", QUESTION, "--brain", cli_brain, "--top", "10", "--json")
    first = json.loads(out)
    used = first["fired"][1]
    args = ["learn", "--brain", cli_brain, "--trace", first["trace_id"], "--outcome", "1"]
    code, out, err = ocb(*args, "--used", used, "--json")
    assert (code, err) == (0, "")
    got = json.loads(out)
    assert got["rule"] == "transfer" and got["route"] and got["credits"][used] == 1.0
    assert got["deltas"] == []
    code, out, _ = ocb("query", QUESTION, "--brain", cli_brain, "--top", "10", "--json")
    assert json.loads(out)["fired"] == [used]
    code, out, _ = ocb("query", QUESTION, "--brain", cli_brain, "--chat-id", "c9")
    code, out, err = ocb("learn", "--brain", cli_brain, "--chat-id", "c9", "--outcome", "1")
    assert code == 0 and out.startswith("outcome +1 (human, transfer) recorded at seq ")
    assert out.rstrip().endswith("the route already holds this")


def test_used_ids_that_did_not_fire_are_one_error_line_and_nothing_is_recorded(
    cli_brain: Path,
) -> None:
    code, out, _ = ocb("query", "who is on call", "--brain", cli_brain, "--json")
    other = json.loads(out)["fired"]
    code, out, _ = ocb("query", QUESTION, "--brain", cli_brain, "--top", "3", "--json")
    trace, fired = json.loads(out)["trace_id"], json.loads(out)["fired"]
    idle = next(n for n in other if n not in fired)
    before = log_bytes(cli_brain)
    for bad, pattern in [
        (idle, rf"error: --used names nodes that did not fire in trace {trace}: {idle}$"),
        ("nope::9", r"error: unknown node 'nope::9'"),
    ]:
        code, out, err = ocb(
            "learn", "--brain", cli_brain, "--trace", trace, "--outcome", "1", "--used", bad
        )
        assert code == 1 and out == ""
        one_error(err, pattern)
        assert log_bytes(cli_brain) == before
