"""The simulation suite's quick run: every claim holds and every brain rebuilds to
its live state."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from sims import run_all
from sims.common import QUICK_RESULTS, RESULTS

ROOT = Path(__file__).resolve().parents[2]


def committed_results() -> dict[str, tuple[bytes, int]]:
    """The bytes and modification time of every published result file."""
    return {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(RESULTS.iterdir())
        if p.is_file()
    }


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


def git_status(git: str) -> str:
    status = [git, "status", "--porcelain", "--untracked-files=all", "--", "sims/results"]
    return subprocess.run(status, cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_a_quick_run_writes_where_git_ignores_it_and_leaves_the_published_results(
    capsys: pytest.CaptureFixture[str],
) -> None:
    git = shutil.which("git") if (ROOT / ".git").exists() else None
    before, status = committed_results(), git_status(git) if git else ""
    assert "negation.json" in before, "the full runs' results are committed"
    assert run_all.main(["--quick", "--only", "negation"]) == 0, capsys.readouterr().out
    assert committed_results() == before
    quick = json.loads((QUICK_RESULTS / "negation.json").read_text())
    assert quick["quick"] and quick["passed"]
    if git:  # in a checkout, git sees no change and ignores the quick results
        assert git_status(git) == status
        ignored = [git, "check-ignore", "-q", str(QUICK_RESULTS / "negation.json")]
        assert subprocess.run(ignored, cwd=ROOT).returncode == 0
