"""A full disk, for real: the brain is copied onto a small tmpfs mounted in a private
mount namespace (``unshare``), the tmpfs is filled, and real ``ocb`` processes run on it.

Once a command's records are acknowledged, a later failure (a snapshot that does not
fit) is a warning, never a failed command; no temporary file is left; a retry with the
same request id records nothing new; and a command that cannot append fails with one
line and records nothing."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb_events.clock import TickClock
from tests.crash_harness import run_on_tmpfs

QUESTION = "how do I roll back a bad deploy"

DRIVER = textwrap.dedent(
    """
    import json, os, shutil, subprocess, sys
    from pathlib import Path

    mnt, src = Path(sys.argv[1]), Path(sys.argv[2])
    brain = mnt / "brain"
    shutil.copytree(src, brain)
    filler = mnt / "filler"

    def fill(leave):
        st = os.statvfs(mnt)
        free = st.f_bavail * st.f_frsize
        with open(filler, "ab") as fh:
            fh.write(b"\\0" * max(0, free - leave))

    def ocb(*args):
        cmd = [sys.executable, "-c", "from ocb.cli.app import main; main()", *args]
        p = subprocess.run(cmd, capture_output=True, text=True)
        return {"code": p.returncode, "out": p.stdout, "err": p.stderr}

    def records():
        p = ocb("events", "--brain", str(brain))
        return len(p["out"].splitlines())

    out = {"before": records()}
    fill(leave=16 * 1024)
    learn = ("learn", "--brain", str(brain), "--chat-id", "c1", "--outcome", "1", "--rule", "pg")
    out["learn"] = ocb(*learn, "--request-id", "r1")
    out["after_learn"] = records()
    out["retry"] = ocb(*learn, "--request-id", "r1", "--json")
    out["blind_retry"] = ocb(*learn)
    out["after_retries"] = records()
    out["tmp"] = sorted(p.name for p in brain.rglob("*.tmp"))
    fill(leave=0)
    # more than a page: the segment's last page keeps its unused bytes writable
    cites = [a for i in range(300) for a in ("--cited", f"notes/padding-{i:04d}.md#L1")]
    out["full"] = ocb(*learn, "--again", *cites)
    out["inject_full"] = ocb("inject", "--brain", str(brain), "--content", "check the canary")
    out["after_full"] = records()
    out["snapshot_full"] = ocb("snapshot", "--brain", str(brain))
    out["tmp_full"] = sorted(p.name for p in brain.rglob("*.tmp"))
    filler.unlink()
    out["snapshot"] = ocb("snapshot", "--brain", str(brain))
    out["verify"] = ocb("verify", "--brain", str(brain))
    print(json.dumps(out))
    """
)


@pytest.fixture
def small_brain(tmp_path: Path, workspace: Path) -> Path:
    path = tmp_path / "brain"
    with Brain.create(path, clock=TickClock()) as b:
        b.sync(workspace)
        b.set_config("storage.snapshot_tail", 1)  # every command snapshots after recording
        b.query(QUESTION, chat_id="c1")
    shutil.rmtree(path / "cache")
    return path


def test_a_full_disk_after_the_append_is_a_warning_and_a_retry_records_once(
    small_brain: Path, tmp_path: Path
) -> None:
    size = sum(p.stat().st_size for p in small_brain.rglob("*") if p.is_file())
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    proc = run_on_tmpfs(script, size + 2 * 1024 * 1024, mnt, str(small_brain), timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    steps = ("learn", "retry", "blind_retry", "full", "inject_full", "snapshot_full", "snapshot")
    for step in (*steps, "verify"):
        assert "Traceback" not in got[step]["err"], got[step]["err"]

    learn = got["learn"]
    assert learn["code"] == 0, learn
    assert "recorded at seq" in learn["out"]
    warnings = learn["err"].splitlines()
    assert warnings and all(w.startswith("warning: could not write a snapshot") for w in warnings)
    assert "No space left on device" in warnings[0]
    assert got["after_learn"] == got["before"] + 2, "the outcome and its update, once"

    retry = json.loads(got["retry"]["out"])
    assert (got["retry"]["code"], retry["recorded"]) == (0, False)
    blind = got["blind_retry"]
    assert blind["code"] == 1 and "already scored by human" in blind["err"]
    assert got["after_retries"] == got["after_learn"], "retries recorded nothing"
    assert got["tmp"] == [] and got["tmp_full"] == [], "no temporary file is left behind"

    full = got["full"]
    assert full["code"] == 1
    lines = full["err"].splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: could not append")
    assert "nothing was recorded" in lines[1]
    inject = [x for x in got["inject_full"]["err"].splitlines() if not x.startswith("warning:")]
    assert got["inject_full"]["code"] == 1 and len(inject) == 2
    assert inject[0].startswith("error: could not store") and "nothing was recorded" in inject[1]
    assert got["after_full"] == got["after_retries"]
    snap = got["snapshot_full"]
    assert snap["code"] == 1, "writing snapshots is the whole command: it fails"
    assert snap["err"].startswith("error: could not write a snapshot of ")

    assert got["snapshot"]["code"] == 0 and got["verify"]["code"] == 0, got["verify"]
