"""A brain is private to its owner: every directory 0700 and every file 0600 whatever the
umask, through every command that writes one (init, query, sql, snapshot, a daemon and
its log); another user reads nothing; ``doctor`` warns about a brain that is not."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from ocb.checks.private import open_paths
from tests.ocb.daemon.support import DEADLINE, env, hello

QUESTION = "how do I roll back a bad deploy"
NOBODY = 65534


def _ocb(*argv: str) -> subprocess.CompletedProcess[str]:
    """``ocb <argv>`` with umask 0: only the modes ocb asks for stand between the brain
    and other users."""
    return subprocess.run(
        [sys.executable, "-m", "ocb.entry", *argv], env=env(), capture_output=True, text=True,
        timeout=DEADLINE, umask=0,
    )  # fmt: skip


def _modes(brain: Path) -> dict[str, int]:
    out = {}
    for p in [brain, *brain.rglob("*")]:
        st = p.lstat()
        if not stat.S_ISLNK(st.st_mode):
            out[p.relative_to(brain).as_posix() or "."] = stat.S_IMODE(st.st_mode)
    return out


def _all_private(brain: Path) -> None:
    modes = _modes(brain)
    wrong = {
        p: f"{m:o}"
        for p, m in modes.items()
        if m != (0o700 if (brain / p).is_dir() else 0o600) and not (brain / p).is_socket()
    }
    assert not wrong, wrong
    assert open_paths(brain) == []


def test_every_file_a_brain_writes_is_private(tmp_path: Path, workspace: Path) -> None:
    brain = tmp_path / "new" / "brain"
    b = str(brain)
    for argv in (
        ("init", "--workspace", str(workspace), "--brain", b),
        ("query", QUESTION, "--brain", b),
        ("sql", "SELECT count(*) FROM events", "--brain", b),
        ("snapshot", "--brain", b),
    ):
        got = _ocb("--no-daemon", *argv)
        assert got.returncode == 0, (argv, got.stderr)
    assert {"log", "snapshots", "blobs", "cache"} <= {p.name for p in brain.iterdir()}
    assert (brain / "cache" / "analytics.duckdb").exists()
    _all_private(brain)
    assert stat.S_IMODE(brain.parent.stat().st_mode) == 0o700  # made for the brain


def test_a_daemon_makes_a_new_brain_private(tmp_path: Path, workspace: Path) -> None:
    brain = tmp_path / "served"
    got = _ocb("serve", "--detach", "--brain", str(brain), "--workspace", str(workspace))
    try:
        assert got.returncode == 0, got.stderr
        assert hello(brain) is not None
        q = _ocb("query", QUESTION, "--brain", str(brain))
        assert q.returncode == 0, q.stderr
        assert stat.S_IMODE((brain / "run" / "ocb.sock").stat().st_mode) == 0o600
    finally:
        stopped = _ocb("serve", "stop", "--brain", str(brain))
    assert stopped.returncode == 0, stopped.stderr
    assert (brain / "run" / "daemon.log").exists()
    _all_private(brain)


def test_another_user_reads_nothing(built: Path) -> None:
    """As root, a process running as ``nobody`` tries every file of a brain in a folder
    open to all; as anyone else, the modes alone are what keeps others out."""
    if os.getuid() != 0:
        assert open_paths(built) == []
        return
    shared = Path(tempfile.mkdtemp(prefix="ocb-shared-"))
    try:
        os.chmod(shared, 0o755)
        brain = shared / "brain"
        shutil.copytree(built, brain)
        files = [str(p) for p in brain.rglob("*") if p.is_file()]
        assert len(files) > 5
        probe = (
            'n=0; for f in "$@"; do head -c1 "$f" >/dev/null 2>&1 && n=$((n+1)); done; '
            'ls "$0" >/dev/null 2>&1 && n=$((n+1)); echo $n'
        )
        got = subprocess.run(
            ["/bin/sh", "-c", probe, str(brain), *files], capture_output=True, text=True,
            user=NOBODY, group=NOBODY, extra_groups=[], timeout=DEADLINE, cwd="/",
        )  # fmt: skip
        assert got.returncode == 0, got.stderr
        assert got.stdout == "0\n"
    finally:
        shutil.rmtree(shared)


def test_doctor_warns_about_a_brain_others_may_read(built: Path) -> None:
    assert open_paths(built) == []
    os.chmod(built, 0o755)
    seg = next((built / "log").glob("*.seg"))
    os.chmod(seg, 0o644)
    got = _ocb("--no-daemon", "doctor", "--brain", str(built))
    line = next(x for x in got.stdout.splitlines() if "privacy" in x)
    assert line == (
        f"WARN  privacy: 2 path(s) readable by others, e.g. {built} (755); "
        f"make it private: chmod -R go-rwx {built}"
    )
    subprocess.run(["chmod", "-R", "go-rwx", str(built)], check=True)
    got = _ocb("--no-daemon", "doctor", "--brain", str(built))
    assert "PASS  privacy:" in got.stdout
