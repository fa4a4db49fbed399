"""Killing real ``ocb`` commands at chosen moments and checking what survives.

Used by the crash test of the suite (kills that land after a command's append) and by
``benchmarks/bench_reliability.py`` (kills anywhere in every writing command). A trial
runs one command as a fresh process on a shared brain and SIGKILLs it either a random
moment after its records are committed (the TAIL checkpoint changed: written after the
fsync) or a random moment after it started. Then the brain must:

* open (a writer repairs only an unfinished batch, and says so);
* hold every record it held before, byte for byte, with the same hash chain (nothing
  acknowledged is ever lost or rewritten);
* load projections equal to a full rebuild of its log (a snapshot or cache written in
  the middle of a kill is never trusted: no silent wrong answer);
* leave no temporary file once a writer has opened it.
"""

from __future__ import annotations

import os
import random
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ocb.brain import Brain
from ocb_events.log import SegmentLog
from ocb_events.schema import OutcomeRecorded, Record
from replay import PROJECTIONS, rebuild

REPO = Path(__file__).resolve().parents[1]
QUESTION = "how do I roll back a bad deploy"
Args = Callable[[int, Path, Path], list[str]]

WRITING: dict[str, Args] = {
    "query": lambda n, b, w: ["query", f"{QUESTION} {n}", "--chat-id", f"c{n % 3}"],
    "learn": lambda n, b, w: [
        "learn", "--chat-id", f"c{n % 3}", "--outcome", "1", "--request-id", f"r{n}", "--again",
    ],
    "inject": lambda n, b, w: ["inject", "--type", "TEACHING", "--content", f"check {n} twice"],
    "retain": lambda n, b, w: ["retain", f"release {n} went out on time", "--entity", "Sam"],
    "recall": lambda n, b, w: ["recall", f"deploy {n}"],
    "kg": lambda n, b, w: ["kg", "set", "lumen-api", "owner", f"team-{n}"],
    "config": lambda n, b, w: ["config", "traversal.max_hops", str(2 + n % 3)],
    "anchor": lambda n, b, w: [
        "anchor", "--file", "runbooks/deploy.md", "--authority",
        ("canonical", "overlay")[n % 2],
    ],
    "maintain": lambda n, b, w: ["maintain", "--ops", "prune,connect", "--prune-below", "0.01"],
    "init": lambda n, b, w: ["init", "--workspace", str(w)],
    "reflect": lambda n, b, w: ["reflect", "--since", "3650d"],
    "snapshot": lambda n, b, w: ["snapshot"],
    "retract": lambda n, b, w: ["retract", "--chat-id", f"c{n % 3}", "--reason", f"trial {n}"],
    "train-route": lambda n, b, w: ["train-route"],
    # rewrites every record holding the question since the last one (the queries of
    # the rounds between), then records content_forgotten
    "forget": lambda n, b, w: ["forget", "--text", QUESTION, "--reason", f"trial {n}"],
}  # fmt: skip
"""Every command that writes, with arguments for its n-th trial."""

MAY_REFUSE = ("forget", "retract", "train-route")
"""Commands a trial may find nothing to do for (everything forgotten or retracted, too
few outcomes to train on): they refuse with one line and record nothing."""


def _refused(command: str, code: int, err: str) -> bool:
    lines = err.splitlines()
    return command in MAY_REFUSE and code == 1 and len(lines) <= 2 and err.startswith("error: ")


APPENDING = ("query", "learn", "inject", "retain", "recall", "kg", "config", "anchor")
"""Commands that always append (a kill after their append is always possible)."""


def env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else "")}


def run_on_tmpfs(
    script: Path, size: int, mnt: Path, *args: str, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a Python ``script`` with ``mnt`` and ``args`` in a private mount namespace
    where a tmpfs of ``size`` bytes is mounted on ``mnt`` (``unshare``: no privilege is
    needed where user namespaces are allowed). The mount ends with the script."""
    argv = " ".join(shlex.quote(str(a)) for a in (sys.executable, script, mnt, *args))
    run = f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(mnt))} && exec {argv}"
    return subprocess.run(
        ["unshare", "--mount", "--map-root-user", "sh", "-c", run],
        capture_output=True,
        text=True,
        env=env(),
        timeout=timeout,
    )


def ocb_argv(args: list[str], brain: Path) -> list[str]:
    cmd = [sys.executable, "-c", "from ocb.cli.app import main; main()", *args]
    return cmd if "--brain" in args else [*cmd, "--brain", str(brain)]


def _unredacted(now: Record, before: Record) -> Record:
    """``before`` when ``now`` is it redacted by ``ocb forget`` (same seq, ts, actor and
    event type: only content differs; the hash chain is checked apart), else ``now``."""
    same = (now.seq, now.ts, now.actor, type(now.event)) == (
        before.seq,
        before.ts,
        before.actor,
        type(before.event),
    )
    return before if same else now


@dataclass
class Outcome:
    """One trial: whether the kill landed after the command's append, whether the
    brain survived, how many acknowledged records were lost, whether it answered from
    state its log does not hold, and what went wrong."""

    command: str
    killed: bool
    after_append: bool
    survived: bool = True
    acked_lost: int = 0
    silent_wrong: int = 0
    detail: str = ""


@dataclass
class Harness:
    """A brain and its workspace that trials run on, in turn."""

    brain: Path
    workspace: Path
    rng: random.Random
    trials: dict[str, int] = field(default_factory=dict)
    history: list[Record] = field(default_factory=list)
    last: list[str] = field(default_factory=list)

    def _tail(self) -> bytes:
        try:
            return (self.brain / "log" / "TAIL").read_bytes()
        except OSError:
            return b""

    def run(
        self, command: str, *, after_append: bool, window_s: float, low_s: float = 0.0
    ) -> Outcome:
        """Run one trial of ``command``: kill it a random moment ``low_s`` to ``low_s +
        window_s`` seconds after its append (``after_append``) or after its start."""
        n = self.trials.get(command, 0)
        self.trials[command] = n + 1
        if command == "init":
            note = self.workspace / "notes" / "crash-trials.md"
            note.write_text(f"# Trial {n}\n\nThe trial number is {n}.\n")
        args = self.last = WRITING[command](n, self.brain, self.workspace)
        tail = self._tail()
        proc = subprocess.Popen(
            ocb_argv(args, self.brain), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env()
        )
        killed = landed = False
        try:
            if after_append:
                deadline = time.monotonic() + 60
                while proc.poll() is None and self._tail() == tail:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.0005)
                landed = proc.poll() is None and self._tail() != tail
            until = time.monotonic() + low_s + self.rng.random() * window_s
            while proc.poll() is None and time.monotonic() < until:
                time.sleep(0.0005)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
        finally:
            _, err = proc.communicate(timeout=60)
        out = Outcome(command, killed, landed and killed)
        if not killed and _refused(command, proc.returncode, err.decode()):
            pass  # nothing left to take back or to forget: refused with one line
        elif not killed and proc.returncode != 0:
            out.survived, out.detail = False, f"exit {proc.returncode}: {err.decode()[-300:]}"
            return out
        self.check(out)
        return out

    def retry(self) -> Outcome:
        """Run the last trial's command again to its end (as a user retries it)."""
        proc = subprocess.run(ocb_argv(self.last, self.brain), capture_output=True, env=env())
        out = Outcome(self.last[0], False, False)
        if proc.returncode != 0:
            out.survived, out.detail = False, f"retry: exit {proc.returncode}: {proc.stderr!r}"
            return out
        self.check(out)
        return out

    def check(self, out: Outcome) -> None:
        """The brain after a trial: opens, keeps its history, answers from its log."""
        try:
            with SegmentLog(self.brain / "log") as log:
                records = list(log.read())
                chains = [log.chain_of(r.seq) for r in self.history[-1:]]
        except Exception as exc:  # noqa: BLE001 - any failure to open is the finding
            out.survived, out.detail = False, f"log: {exc}"
            return
        kept = records[: len(self.history)]
        if out.command == "forget":  # records may be redacted: the same but for content
            kept = [_unredacted(a, b) for a, b in zip(kept, self.history, strict=False)]
        if kept != self.history:
            out.acked_lost = sum(a != b for a, b in zip(kept, self.history, strict=False))
            out.acked_lost += len(self.history) - len(kept)
            out.detail = "acknowledged records changed or lost"
        with SegmentLog(self.brain / "log", writer=False) as log:
            if self.history and [log.chain_of(self.history[-1].seq)] != chains:
                out.acked_lost += 1
                out.detail = "the hash chain of the history changed"
        self.history = records
        self._check_state(out)

    def _check_state(self, out: Outcome) -> None:
        try:
            with Brain(self.brain) as b:
                b.store.load(*PROJECTIONS)
                full = rebuild(b.log)
                wrong = [
                    n
                    for n in PROJECTIONS
                    if PROJECTIONS[n].snapshot(b.state(n)) != PROJECTIONS[n].snapshot(full[n])
                ]
                b.store.search_index()
                requests = [
                    r.event.request_id
                    for r in b.log.read()
                    if isinstance(r.event, OutcomeRecorded) and r.event.request_id
                ]
        except Exception as exc:  # noqa: BLE001 - any failure to open is the finding
            out.survived, out.detail = False, f"brain: {exc}"
            return
        if wrong:
            out.silent_wrong += 1
            out.detail = "projections differ from a rebuild: " + ", ".join(wrong)
        if len(requests) != len(set(requests)):
            out.silent_wrong += 1
            out.detail = "an outcome was recorded twice under one request id"
        temps = sorted(p.name for p in self.brain.rglob("*.tmp"))
        if temps:
            out.survived, out.detail = False, f"temporary files left: {temps}"
