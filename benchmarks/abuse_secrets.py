"""Abuse trials of secrets outside the text a brain scans, against a real daemon: an
AWS access key id, a Slack token, a GitHub token and an OpenAI key, each put in a folder
name, a file name, a chat id, a request id and a retract reason. A trial holds when no
byte of the secret is found under the brain directory afterwards (log segments,
snapshots, the search and analytics caches, blobs, the daemon's log).

``new`` trials attack a brain as it is: the watcher sees the named file appear, the
``ocb`` client sends the keys and the reason through the daemon. ``forget`` trials
start from a brain that recorded the secret in clear (scanning off, as before names and
keys were scanned), turn scanning on, and erase it with ``ocb forget --text`` (the
``forget-file`` ones: ``--file`` the file named with it) through the daemon. ``TRIALS``
is run by ``bench_reliability.py --live``; run alone:

    .venv/bin/python benchmarks/abuse_secrets.py               # every trial, once
    .venv/bin/python benchmarks/abuse_secrets.py new slack     # trials whose name has all words
    .venv/bin/python benchmarks/abuse_secrets.py --cost 1000   # the net's cost on queries

``--cost N`` times query+learn rounds on a synthetic workspace of N files (10 chunks
each) with the record-time net on and off: two copies of one brain served the same
queries in one process, round by round; medians and their ratio.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.abuse_support import Trial, example_brain, run  # noqa: E402
from benchmarks.live_support import served  # noqa: E402

__all__ = ["TRIALS"]

SECRETS = {
    "aws": "AKIA" + "Q3VZ7XKD2NR5TW8Y",
    "slack": "xoxb-" + "2837461950-Kd83nVb2LqZ7wX1p",
    "github": "ghp_" + "x9Kq2LmZ7vB4nR8tW1yC6pD3sF5gH0jA2eUo",
    "openai": "sk-proj-" + "7Hq2Zx9LmW4vB8nR1tY6cK3p",
}
PLACES = ("folder", "file", "chat id", "request id", "reason")
DEADLINE = 120.0
NOTE = "# Rotation\n\nRotate the staging keys every quarter, on a Monday.\n"
QUESTION = "rotate the staging keys every quarter"


def _wait(cond: Callable[[], bool], deadline: float = DEADLINE) -> bool:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def _log(brain: Path) -> str:
    log = brain / "run" / "daemon.log"
    return log.read_text(errors="replace") if log.exists() else ""


def _found(brain: Path, secret: str) -> list[str]:
    """The files under ``brain`` that hold a byte-for-byte copy of ``secret``."""
    needle = secret.encode()
    return [
        str(p.relative_to(brain)) for p in sorted(brain.rglob("*")) if p.is_file()
        and needle in p.read_bytes()
    ]  # fmt: skip


def _ok(*argv: str) -> str:
    res = run(*argv)
    if res.returncode != 0:
        raise RuntimeError(f"ocb {argv[0]} failed: {res.stderr.strip()[-300:]}")
    return res.stdout + res.stderr


def _path(place: str, secret: str) -> str:
    return f"keys/{secret}/rotation.md" if place == "folder" else f"notes/rotation-{secret}.md"


def _attack(ws: Path, brain: Path, place: str, secret: str, *, checked: bool = True) -> str:
    """Put ``secret`` in ``place`` through the served brain (``checked``: with scanning
    on); what the client printed."""
    b = ("--brain", str(brain))
    if place in ("folder", "file"):
        rel = _path(place, secret)
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(NOTE)
        seen = "its name holds a secret" if checked else "synced: 1 added"
        if not _wait(lambda: seen in _log(brain)):
            raise RuntimeError("the watcher never reported the file")
        return _ok("query", *b, QUESTION)
    chat = f"chat-{secret}" if place == "chat id" else "c1"
    req = secret if place == "request id" else "r1"
    said = _ok("query", *b, "--chat-id", chat, QUESTION)
    for _ in range(2):  # a retry: counted once
        said += _ok("learn", *b, "--chat-id", chat, "--outcome", "1", "--request-id", req)
    why = f"scored by mistake {secret}" if place == "reason" else "scored by mistake"
    return said + _ok("retract", *b, "--chat-id", chat, "--reason", why)


Fn = Callable[[Path], tuple[bool, str]]


def _failing(fn: Fn) -> Fn:
    """A trial whose attack could not be made reports it as not held."""

    def trial(scratch: Path) -> tuple[bool, str]:
        try:
            return fn(scratch)
        except RuntimeError as exc:
            return False, str(exc)

    return trial


def _new(place: str, kind: str) -> Fn:
    @_failing
    def trial(scratch: Path) -> tuple[bool, str]:
        ws, brain = example_brain(scratch)
        secret = SECRETS[kind]
        with served(brain):
            said = _attack(ws, brain, place, secret)
        _ok("sql", "--brain", str(brain), "SELECT count(*) FROM events")  # the analytics cache
        found = _found(brain, secret) + (["the client's output"] if secret in said else [])
        files = sum(1 for p in brain.rglob("*") if p.is_file())
        return not found, f"found in {found}" if found else f"no byte of it in {files} files"

    return trial


def _forget(place: str, kind: str, *, by_file: bool = False) -> Fn:
    """``by_file``: forget the file named with the secret (``--file``), not the text."""

    @_failing
    def trial(scratch: Path) -> tuple[bool, str]:
        ws, brain = example_brain(scratch)
        secret = SECRETS[kind]
        _ok("config", "--brain", str(brain), "secrets.enabled", "false")
        with served(brain):
            _attack(ws, brain, place, secret, checked=False)
        _ok("sql", "--brain", str(brain), "SELECT count(*) FROM events")
        before = _found(brain, secret)
        if not before:
            return False, "the old brain never recorded it: nothing to try"
        _ok("config", "--brain", str(brain), "secrets.enabled", "true")
        with served(brain):
            what = ("--file", _path(place, secret)) if by_file else ("--text", secret)
            said = _ok("forget", "--brain", str(brain), *what)
            said += _ok("query", "--brain", str(brain), "--chat-id", f"chat-{secret}", QUESTION)
        _ok("sql", "--brain", str(brain), "SELECT count(*) FROM events")
        found = _found(brain, secret) + (["the client's output"] if secret in said else [])
        if found:
            return False, f"still in {found}"
        return True, f"was in {len(before)} files ({', '.join(before[:3])} ...); now in none"

    return trial


TRIALS: list[Trial] = [
    *(
        Trial(f"new {kind} {place}", f"a {kind} secret in a {place}, served", _new(place, kind))
        for place in PLACES
        for kind in SECRETS
    ),
    *(
        Trial(
            f"forget {kind} {place}",
            f"a {kind} secret an old brain recorded in a {place}, forgotten through the daemon",
            _forget(place, kind),
        )
        for place in PLACES
        for kind in SECRETS
    ),
    *(
        Trial(
            f"forget-file {kind} {place}",
            f"a file an old brain indexed under a {place} named with a {kind} secret, "
            "forgotten with --file through the daemon",
            _forget(place, kind, by_file=True),
        )
        for place in ("folder", "file")
        for kind in SECRETS
    ),
]


# --------------------------------------------------------------------------- the net's cost


def cost(files: int, rounds: int = 300) -> str:
    """Medians of a query+learn round with the record-time net on and off: two copies of
    one brain (appends not fsynced), served the same queries in one process, round by
    round (which goes first alternates), and their ratio."""
    import shutil

    import ocb.store  # noqa: F401 (patched below through sys.modules)
    from benchmarks.bench_core import make_workspace
    from ocb.brain import Brain

    store: Any = sys.modules["ocb.store"]  # where Store.record finds the net
    net = store.screened

    def passthrough(events: Any, scanner: Any, warn: Any) -> Any:
        return events

    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        ws.mkdir()
        queries = make_workspace(ws, files, rounds, 7)
        brain, report = Brain.init(Path(d) / "on", ws)
        brain.close()
        shutil.copytree(Path(d) / "on", Path(d) / "off")
        # no fsync: the disk's noise would hide a cost of this size
        brains = {
            k: Brain(Path(d) / ("on" if k else "off"), durability="none") for k in (True, False)
        }
        times: dict[bool, list[float]] = {True: [], False: []}
        for b in brains.values():
            for q in queries[:10]:
                b.query(q["text"], record=False)  # loads projections and the index
        for i, q in enumerate(queries):
            for on in (True, False) if i % 2 else (False, True):
                store.screened = net if on else passthrough
                t0 = time.perf_counter()
                a = brains[on].query(q["text"], chat_id=f"chat-{i}")
                brains[on].learn(1.0 if i % 3 else -1.0, trace_id=a.trace_id, request_id=f"r{i}")
                times[on].append(time.perf_counter() - t0)
        store.screened = net
        for b in brains.values():
            b.close()
    on_ms, off_ms = (statistics.median(times[k]) * 1000 for k in (True, False))
    return (
        f"{report.nodes} chunks, {rounds} rounds: query+learn median {on_ms:.2f} ms with the "
        f"net, {off_ms:.2f} ms without; ratio {on_ms / off_ms:.3f}"
    )


def main(argv: list[str]) -> None:
    if argv[:1] == ["--cost"]:
        for n in argv[1:] or ["100", "1000"]:
            print(cost(int(n)), flush=True)
        return
    for t in TRIALS:
        if argv and not all(w in t.name for w in argv):
            continue
        with tempfile.TemporaryDirectory() as d:
            t0 = time.monotonic()
            held, detail = t.fn(Path(d))
            print(f"{'held' if held else 'FAILED':6} {t.name:26} {time.monotonic() - t0:5.1f}s"
                  f"  {detail}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
