"""The simulation suite's quick run: every claim holds and every brain rebuilds to
its live state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sims import run_all


def test_every_simulation_holds_its_claim_in_the_quick_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_all.main(["--quick", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    results = {p.stem: json.loads(p.read_text()) for p in tmp_path.glob("*.json")}
    assert sorted(results) == sorted(run_all.SIMULATIONS)
    for name, r in results.items():
        assert r["passed"] and r["rebuild_equal"] and r["quick"], name
    assert out.count("| yes | yes |") == len(run_all.SIMULATIONS)


def test_an_unknown_simulation_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_all.main(["--only", "telepathy"]) == 2
    assert "unknown simulation(s): telepathy" in capsys.readouterr().err
