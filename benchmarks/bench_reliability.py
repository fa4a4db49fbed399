"""Reliability: SIGKILL trials across every writing command, every corruption scenario
of the trust issue, a full disk on a small tmpfs, and abuse of a live brain. Not part of
the test suite.

    .venv/bin/python benchmarks/bench_reliability.py            # 11-18 min on 2 cores
    .venv/bin/python benchmarks/bench_reliability.py --kills 100 --quick
    .venv/bin/python benchmarks/bench_reliability.py --live-only  # the abuse trials alone

Prints one table (tried / survived / acknowledged records lost / silent wrong results
per part) and writes ``benchmarks/results/reliability.json``.

* Kills: each trial runs a real ``ocb`` command as a fresh process on a shared brain of
  the example workspace (a snapshot after every command) and SIGKILLs it: half of the
  trials (alternate rounds of all commands) a random 0-60 ms after its records are
  committed (while it folds, snapshots and closes), the others a random moment from
  65 % to 105 % of the command's measured run time after its start (start-up alone is
  most of a run, so earlier kills prove nothing), until ``--kills`` trials have killed
  a running command (a command that ends first is not counted). Then (``tests/crash_harness.py``)
  the brain must open, keep every record it held before byte for byte with the same
  hash chain, load projections equal to a full rebuild, and leave no temp file; a
  killed ``learn`` is retried with its request id and must count once.
* Corruption: each scenario damages a fresh copy of a brain, runs commands on it and
  checks that each either refuses with one line naming the damage or answers exactly
  as a rebuild of its log would (a silent wrong result otherwise), then repairs it
  (``ocb verify --repair``, ``ocb doctor --repair``) where the scenario calls for it and
  checks that every intact record is kept.
* Full disk: the brain on a tmpfs in a private mount namespace, filled to leave 0 to
  256 KiB, then every writing command: each must exit 0 (maybe with a warning) or 1
  with one error line, never a traceback; afterwards the brain opens, verifies, holds
  every record it acknowledged and no temp file.
* Live brain (``--live``, on by default): every trial of ``benchmarks/abuse_*.py`` (the
  daemon, SQL, workspace files, secrets, the log), each against real ``ocb`` processes
  in a fresh directory, reported as held or not with what was seen.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ocb.brain import Brain  # noqa: E402
from ocb_events.clock import TickClock  # noqa: E402
from ocb_events.log import SegmentLog  # noqa: E402
from ocb_events.schema import Record  # noqa: E402
from replay import PROJECTIONS, rebuild  # noqa: E402
from tests.crash_harness import (  # noqa: E402
    QUESTION,
    WRITING,
    Harness,
    Outcome,
    env,
    ocb_argv,
    run_on_tmpfs,
)

EXAMPLE = REPO / "examples" / "workspace"
RESULTS = REPO / "benchmarks" / "results" / "reliability.json"


def make_brain(root: Path) -> tuple[Path, Path]:
    ws = root / "workspace"
    shutil.copytree(EXAMPLE, ws)
    brain = root / "brain"
    with Brain.create(brain, clock=TickClock()) as b:
        b.sync(ws)
        b.set_config("storage.snapshot_tail", 1)
        for i in range(6):
            b.learn(1.0, trace_id=b.query(QUESTION, chat_id=f"c{i % 3}").trace_id)
    return ws, brain


def ocb(brain: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(ocb_argv(list(args), brain), capture_output=True, text=True, env=env())


# --------------------------------------------------------------------------- kills


def command_times(h: Harness) -> dict[str, float]:
    """The median run time of each writing command (three unkilled runs)."""
    out = {}
    for command in WRITING:
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            got = h.run(command, after_append=False, window_s=120)  # not killed: ends first
            runs.append(time.perf_counter() - start)
            assert got.survived, got.detail
        out[command] = statistics.median(runs)
    return out


def kills(root: Path, trials: int, seed: int) -> dict[str, Any]:
    ws, brain = make_brain(root)
    with SegmentLog(brain / "log", writer=False) as log:
        history: list[Record] = list(log.read())
    h = Harness(brain, ws, random.Random(seed), history=history)
    times = command_times(h)
    outcomes: list[Outcome] = []
    commands = sorted(WRITING)
    i = 0
    while sum(o.killed for o in outcomes) < trials and i < 4 * trials:
        command = commands[i % len(commands)]
        if (i // len(commands)) % 2 == 0:
            got = h.run(command, after_append=True, window_s=0.06)
        else:  # from late in start-up to just past the end of its usual run
            low = 0.65 * times[command]
            got = h.run(command, after_append=False, low_s=low, window_s=0.4 * times[command])
        outcomes.append(got)
        if command == "learn" and got.killed:
            outcomes.append(h.retry())
        i += 1
        if i % 100 == 0:
            print(f"  kills: {sum(o.killed for o in outcomes)}/{trials}", file=sys.stderr)
    return {
        "times_s": times,
        "tried": sum(o.killed for o in outcomes),
        "after_append": sum(o.after_append for o in outcomes),
        "finished_first": sum(not o.killed for o in outcomes),
        "runs": len(outcomes),
        "failed_runs": sum(not o.survived for o in outcomes),
        "survived": sum(o.survived for o in outcomes if o.killed),
        "acked_lost": sum(o.acked_lost for o in outcomes),
        "silent_wrong": sum(o.silent_wrong for o in outcomes),
        "failures": [(o.command, o.detail) for o in outcomes if o.detail][:20],
        "by_command": {c: sum(o.killed for o in outcomes if o.command == c) for c in commands},
    }


# --------------------------------------------------------------------------- corruption


Check = Callable[[Path, Path], tuple[bool, int, int, str]]


def _same_as_rebuild(brain: Path) -> bool:
    with Brain(brain) as b:
        b.store.load(*PROJECTIONS)
        full = rebuild(b.log)
        return all(
            PROJECTIONS[n].snapshot(b.state(n)) == PROJECTIONS[n].snapshot(full[n])
            for n in PROJECTIONS
        )


def _records(brain: Path) -> list[Record]:
    with SegmentLog(brain / "log", writer=False) as log:
        return list(log.read())


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def _offset(brain: Path, seq: int) -> tuple[Path, int]:
    with SegmentLog(brain / "log", writer=False) as log:
        seg = next(s for s in reversed(log._segments) if s.first_seq <= seq)
        return seg.path, log._offsets(seg)[seq - seg.first_seq]


PROBES = (
    ["query", QUESTION, "--json"],
    ["learn", "--chat-id", "c1", "--outcome", "1", "--again"],
    ["recall", "deploy"],
    ["sql", "SELECT count(*) FROM events"],
    ["snapshot"],
)


def _probe(brain: Path, refuse: str | None) -> tuple[int, str]:
    """Run the probes: each refuses with one line naming ``refuse`` (when given) or
    works; returns (silent wrong results, detail)."""
    wrong, detail = 0, ""
    for args in PROBES:
        got = ocb(brain, *args)
        if "Traceback" in got.stderr:
            return wrong + 1, f"{args[0]}: traceback"
        lines = [ln for ln in got.stderr.splitlines() if not ln.startswith("warning:")]
        if refuse is not None:
            ok = got.returncode == 1 and len(lines) == 2 and refuse in lines[0]
            if not ok:
                wrong, detail = wrong + 1, f"{args[0]} did not refuse: {got.stderr[:200]}"
        elif got.returncode != 0:
            wrong, detail = wrong + 1, f"{args[0]} failed: {got.stderr[:200]}"
    if refuse is None and not _same_as_rebuild(brain):
        wrong, detail = wrong + 1, "answers from state the log does not hold"
    return wrong, detail


def _repair_keeps(brain: Path, before: list[Record], lost: set[int]) -> int:
    got = ocb(brain, "verify", "--repair")
    if got.returncode != 0:
        return len(before)
    after = _records(brain)
    return sum(
        1 for r in before if r.seq not in lost and (r.seq > len(after) or after[r.seq - 1] != r)
    )


def scenario_flip_middle(brain: Path, tmp: Path) -> tuple[int, int, str]:
    before = _records(brain)
    seg, off = _offset(brain, 20)
    _flip(seg, off + 60)
    wrong, detail = _probe(brain, "log corrupt at seq 20")
    return wrong, _repair_keeps(brain, before, {20}), detail


def _flip_last(brain: Path, drop_tail: bool) -> tuple[int, int, str]:
    before = _records(brain)
    last = before[-1].seq
    seg = sorted((brain / "log").glob("*.seg"))[-1]
    _flip(seg, seg.stat().st_size - 4)
    if drop_tail:
        (brain / "log" / "TAIL").unlink()
    wrong, detail = _probe(brain, f"log corrupt at seq {last}")
    return wrong, _repair_keeps(brain, before, {last}), detail


def scenario_flip_last(brain: Path, tmp: Path) -> tuple[int, int, str]:
    return _flip_last(brain, False)


def scenario_flip_last_no_tail(brain: Path, tmp: Path) -> tuple[int, int, str]:
    return _flip_last(brain, True)


def _lose_end(brain: Path, how: str, drop_tail: bool) -> tuple[int, int, str]:
    before = _records(brain)
    seg = sorted((brain / "log").glob("*.seg"))[-1]
    if how == "delete":
        seg.unlink()
    else:
        seg.write_bytes(seg.read_bytes()[:10])
    if drop_tail:
        (brain / "log" / "TAIL").unlink()
    wrong, detail = _probe(brain, "records 1..")
    lost = {r.seq for r in before}
    return wrong, _repair_keeps(brain, before, lost), detail


def scenario_truncated_segment(brain: Path, tmp: Path) -> tuple[int, int, str]:
    return _lose_end(brain, "truncate", False)


def scenario_deleted_segment(brain: Path, tmp: Path) -> tuple[int, int, str]:
    return _lose_end(brain, "delete", False)


def scenario_deleted_segment_and_tail(brain: Path, tmp: Path) -> tuple[int, int, str]:
    return _lose_end(brain, "delete", True)


def scenario_restored_older_backup(brain: Path, tmp: Path) -> tuple[int, int, str]:
    backup = tmp / "backup"
    shutil.copytree(brain / "log", backup)
    before = _records(brain)
    for i in range(8):
        assert ocb(brain, "query", f"what changed {i}").returncode == 0
    shutil.rmtree(brain / "log")
    shutil.copytree(backup, brain / "log")  # the corruption hint's advice, taken
    wrong, detail = _probe(brain, f"the log ends at seq {len(before)}")
    return wrong, _repair_keeps(brain, before, set()), detail


def scenario_other_history(brain: Path, tmp: Path) -> tuple[int, int, str]:
    other = tmp / "other"
    with Brain(brain, writer=False) as mine:
        ws = mine.graph.workspace
    with Brain.create(other, clock=TickClock(start_ns=5)) as b:
        b.sync(ws)
        for i in range(60):
            b.query(f"who is on call {i}", chat_id=f"c{i % 3}")
    shutil.rmtree(brain / "log")
    shutil.copytree(other / "log", brain / "log")  # a whole brain restored from a backup,
    shutil.copytree(other / "blobs", brain / "blobs", dirs_exist_ok=True)  # but snapshots
    wrong, detail = _probe(brain, None)
    return wrong, 0, detail


def _benign(damage: Callable[[Path], None]) -> Callable[[Path, Path], tuple[int, int, str]]:
    def run(brain: Path, tmp: Path) -> tuple[int, int, str]:
        before = _records(brain)
        damage(brain)
        wrong, detail = _probe(brain, None)
        after = _records(brain)
        lost = sum(1 for r in before if r.seq > len(after) or after[r.seq - 1] != r)
        return wrong, lost, detail

    return run


def _garbage_tail(brain: Path) -> None:
    (brain / "log" / "TAIL").write_bytes(b"\x07" * 64)


def _damage_snapshot(brain: Path) -> None:
    snap = max((brain / "snapshots").glob("graph-*.snap"))
    _flip(snap, snap.stat().st_size // 2)


def _torn_batch(brain: Path) -> None:
    tail = (brain / "log" / "TAIL").read_bytes()
    with SegmentLog(brain / "log", clock=TickClock(start_ns=3 * 10**18)) as log:
        from ocb_events.schema import ConfigChanged

        log.append([ConfigChanged(key="traversal.max_hops", value=2)] * 3, actor="cli")
    seg = sorted((brain / "log").glob("*.seg"))[-1]
    seg.write_bytes(seg.read_bytes()[:-30])
    (brain / "log" / "TAIL").write_bytes(tail)


def _lost_blobs(brain: Path) -> None:
    shutil.rmtree(brain / "blobs")
    got = ocb(brain, "doctor", "--repair")
    assert got.returncode == 0, got.stdout + got.stderr


def _damaged_analytics(brain: Path) -> None:
    ocb(brain, "sql", "SELECT 1")
    (brain / "cache" / "analytics.duckdb").write_bytes(b"not a database" * 100)


def _copy_over_log(brain: Path) -> None:
    seg = sorted((brain / "log").glob("*.seg"))[0]
    got = ocb(brain, "sql", f"COPY (SELECT 'x') TO '{seg}' (FORMAT csv)")
    assert got.returncode == 1


SCENARIOS: dict[str, Callable[[Path, Path], tuple[int, int, str]]] = {
    "a flipped byte in a middle record": scenario_flip_middle,
    "bit rot in the last record": scenario_flip_last,
    "bit rot in the last record, TAIL gone": scenario_flip_last_no_tail,
    "last segment shorter than its header": scenario_truncated_segment,
    "last segment deleted": scenario_deleted_segment,
    "last segment and TAIL deleted": scenario_deleted_segment_and_tail,
    "log restored from an older backup": scenario_restored_older_backup,
    "log replaced by another history": scenario_other_history,
    "TAIL deleted": _benign(lambda b: (b / "log" / "TAIL").unlink()),
    "TAIL garbage": _benign(_garbage_tail),
    "SEALS deleted": _benign(lambda b: (b / "log" / "SEALS").unlink(missing_ok=True)),
    "a snapshot damaged": _benign(_damage_snapshot),
    "snapshots deleted": _benign(lambda b: shutil.rmtree(b / "snapshots")),
    "an unfinished batch (writer killed)": _benign(_torn_batch),
    "blobs deleted (doctor --repair)": _benign(_lost_blobs),
    "analytics store damaged": _benign(_damaged_analytics),
    "SQL COPY over the log": _benign(_copy_over_log),
}


def corruption(root: Path) -> dict[str, Any]:
    template = root / "template"
    make_brain(template)
    rows = []
    for name, scenario in SCENARIOS.items():
        case = root / f"case-{len(rows)}"
        shutil.copytree(template, case)
        brain = case / "brain"
        try:
            wrong, lost, detail = scenario(brain, case)
            ok = True
        except Exception as exc:  # noqa: BLE001 - a scenario that breaks is a finding
            wrong, lost, detail, ok = 0, 0, f"{type(exc).__name__}: {exc}", False
        rows.append({"scenario": name, "ok": ok, "wrong": wrong, "lost": lost, "detail": detail})
        print(f"  corruption: {name}: wrong {wrong}, lost {lost} {detail}", file=sys.stderr)
    return {
        "tried": len(rows),
        "survived": sum(r["ok"] for r in rows),
        "acked_lost": sum(r["lost"] for r in rows),
        "silent_wrong": sum(r["wrong"] for r in rows),
        "rows": rows,
    }


# --------------------------------------------------------------------------- full disk

DISK_DRIVER = """
import json, os, shutil, subprocess, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from ocb_events.log import SegmentLog
from tests.crash_harness import QUESTION, WRITING, env, ocb_argv

mnt, ws_src = Path(sys.argv[1]), Path(sys.argv[2])


def ocb(brain, args):
    return subprocess.run(ocb_argv(args, brain), capture_output=True, text=True, env=env())


def seqs(brain):
    with SegmentLog(brain / "log", writer=False) as log:
        return [r.seq for r in log.read()]


rows = []
for leave in (0, 4096, 16384, 65536, 262144, 1048576):
    case = mnt / "case"
    shutil.rmtree(case, ignore_errors=True)
    ws, brain = case / "workspace", case / "brain"
    shutil.copytree(ws_src, ws)
    ocb(brain, ["init", "--workspace", str(ws), "--brain", str(brain)])
    ocb(brain, ["config", "storage.snapshot_tail", "1"])
    for c in ("c0", "c1", "c2"):
        ocb(brain, ["query", QUESTION, "--chat-id", c])
    filler = mnt / "filler"
    (ws / "notes" / "disk.md").write_text("# Disk\\n\\nA new note for init to record.\\n")
    st = os.statvfs(mnt)
    with open(filler, "wb") as fh:
        fh.write(bytes(max(0, st.f_bavail * st.f_frsize - leave)))
    acked = seqs(brain)
    for n, command in enumerate(sorted(WRITING)):
        p = ocb(brain, WRITING[command](n, brain, ws))
        errors = [x for x in p.stderr.splitlines() if not x.startswith("warning:")]
        one = p.returncode == 0 or (len(errors) == 2 and errors[0].startswith("error:"))
        rows.append({"leave": leave, "command": command, "code": p.returncode,
                     "traceback": "Traceback" in p.stderr, "one_line": one,
                     "error": errors[0] if errors else ""})
        if p.returncode == 0:
            acked = seqs(brain)
    filler.unlink()
    with SegmentLog(brain / "log") as log:
        have = {r.seq for r in log.read()}
    temps = sorted(p.name for p in case.rglob("*.tmp"))
    verify = ocb(brain, ["verify"])
    rows.append({"leave": leave, "command": "after", "lost": len(set(acked) - have),
                 "temps": temps, "verify": verify.returncode})
print(json.dumps(rows))
"""


def full_disk(root: Path) -> dict[str, Any]:
    ws, brain = make_brain(root / "disk")
    size = sum(p.stat().st_size for p in brain.rglob("*") if p.is_file())
    mnt = root / "mnt"
    mnt.mkdir()
    driver = root / "disk_driver.py"
    driver.write_text(DISK_DRIVER)
    proc = run_on_tmpfs(driver, 2 * size + (4 << 20), mnt, str(ws), str(REPO))
    if proc.returncode != 0:
        return {"tried": 0, "error": proc.stderr[-500:]}
    rows = json.loads(proc.stdout)
    runs = [r for r in rows if r["command"] != "after"]
    after = [r for r in rows if r["command"] == "after"]
    return {
        "tried": len(runs),
        "survived": sum(not r["traceback"] and r["one_line"] for r in runs),
        "exit_0": sum(r["code"] == 0 for r in runs),
        "acked_lost": sum(r["lost"] for r in after),
        "silent_wrong": sum(bool(r["temps"]) or r["verify"] != 0 for r in after),
        "failures": [r for r in runs if r["traceback"] or not r["one_line"]],
        "after": after,
        "rows": rows,
    }


# --------------------------------------------------------------------------- live brain

LIVE_AREAS = ("abuse_daemon", "abuse_sql", "abuse_files", "abuse_secrets", "abuse_log")
"""The modules of abuse trials, each exporting ``TRIALS``."""


def live(root: Path, only: str = "") -> dict[str, Any]:
    """Every abuse trial (those whose name holds ``only``), each in its own directory."""
    import importlib

    rows = []
    for area in LIVE_AREAS:
        trials = importlib.import_module(f"benchmarks.{area}").TRIALS
        for i, trial in enumerate(t for t in trials if only in t.name):
            scratch = root / area / str(i)
            scratch.mkdir(parents=True)
            started = time.perf_counter()
            try:
                held, detail = trial.fn(scratch)
            except Exception as exc:  # a trial that breaks did not show the brain held
                held, detail = False, f"the trial raised {type(exc).__name__}: {exc}"
            seconds = round(time.perf_counter() - started, 1)
            rows.append({"area": area.removeprefix("abuse_"), "name": trial.name,
                         "attack": trial.attack, "held": held, "detail": detail,
                         "seconds": seconds})  # fmt: skip
            verdict = "held" if held else "NOT HELD"
            line = f"{verdict:<8} {area.removeprefix('abuse_'):<8} {trial.name:<40} {seconds:>6} s"
            print(f"  {line}  {detail}", file=sys.stderr, flush=True)
    return {"tried": len(rows), "survived": sum(r["held"] for r in rows), "rows": rows}


# --------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=1000, help="kill trials")
    ap.add_argument("--seed", type=int, default=20_261_123)
    ap.add_argument("--quick", action="store_true", help="skip corruption and full disk")
    ap.add_argument("--no-live", action="store_true", help="skip the live-brain abuse trials")
    ap.add_argument("--live-only", action="store_true", help="only the live-brain abuse trials")
    ap.add_argument("--only", default="", help="live trials whose name holds this")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ocb-reliability-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        result: dict[str, Any] = {}
        if not a.live_only:
            result["kills"] = kills(root / "kills", a.kills, a.seed)
            if not a.quick:
                result["corruption"] = corruption(root / "corruption")
                result["full_disk"] = full_disk(root)
        if not a.no_live:
            result["live"] = live(root / "live", a.only)
        result["seconds"] = round(time.perf_counter() - started, 1)
    out = RESULTS if not a.live_only else RESULTS.with_name("reliability-live.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    k = result.get("kills")
    print(f"{'part':<36} {'tried':>6} {'survived':>9} {'acked lost':>11} {'silent wrong':>13}")
    rows = [
        (f"SIGKILL ({k['after_append']} after the append)" if k else "", k),
        ("corruption scenarios", result.get("corruption")),
        ("full disk (commands on a full tmpfs)", result.get("full_disk")),
        ("live brain abuse (held)", result.get("live")),
    ]
    for name, r in rows:
        if r:
            print(
                f"{name:<36} {r['tried']:>6} {r.get('survived', 0):>9} "
                f"{r.get('acked_lost', 0):>11} {r.get('silent_wrong', 0):>13}"
            )
    print(f"({result['seconds']} s; details in {out.relative_to(REPO)})")


if __name__ == "__main__":
    main()
