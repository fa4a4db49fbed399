"""Abuse trials of the workspace's files against a real daemon: what no file may do to
the writer (hang it on a FIFO, a socket or a device), what no link may leak through
``memory_get`` (``.env``, a hard link out, a binary file), and what a big note does
to the other requests while it syncs. ``TRIALS`` is run by
``bench_reliability.py --live``; run alone:

    .venv/bin/python benchmarks/abuse_files.py              # every trial, once
    .venv/bin/python benchmarks/abuse_files.py fifo big     # those whose name has a word
    .venv/bin/python benchmarks/abuse_files.py --stall 4 50    # a new note of 4, 50 MB
    .venv/bin/python benchmarks/abuse_files.py --append 4      # a line added to a 4 MB note
    .venv/bin/python benchmarks/abuse_files.py --compare 4 8   # before/after embed_ahead
    .venv/bin/python benchmarks/abuse_files.py --compare 0.3 --embedder minilm

Each trial builds the example brain in its scratch directory, serves it with ``ocb
serve`` and attacks it through its workspace and its socket.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.abuse_support import ENV, EXAMPLE, Trial, example_brain, run  # noqa: E402
from benchmarks.live_support import served  # noqa: E402
from ocb.daemon.protocol import RpcError, call, connect  # noqa: E402

__all__ = ["TRIALS"]

SECRET = "hunter2"
"""In every file a trial must not see indexed or returned (no known key pattern)."""
DEADLINE = 120.0
WORDS = (
    "deploy rollback incident postgres replica latency budget owner review migration "
    "cache eviction queue retry backoff alert pager runbook canary shard index vacuum "
    "release freeze hotfix staging tenant quota audit token rotation certificate"
).split()


def rpc(brain: Path, method: str, timeout: float = DEADLINE, **params: Any) -> Any:
    sock = connect(brain, timeout=timeout)
    if sock is None:
        raise RpcError(0, "no daemon")
    with sock:
        return call(sock, method, params)


def _wait(cond: Callable[[], Any], deadline: float = DEADLINE) -> Any:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    return None


def _finds(brain: Path, text: str, path: str) -> bool:
    got = rpc(brain, "query", text=text)
    return any(h["source"].startswith(path + "#") for h in got["results"])


def _unblock(fifos: list[Path]) -> None:
    for f in fifos:
        try:
            os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def _socket_file(path: Path) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(os.fspath(path))
    finally:
        s.close()


def _log(brain: Path) -> str:
    p = brain / "run" / "daemon.log"
    return p.read_text() if p.exists() else ""


def _log_bytes(brain: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((brain / "log").glob("*.seg")))


# --------------------------------------------------------------------------- not a file


def _entries(kind: str, ws: Path, folder: str) -> tuple[list[str], list[Path]]:
    """Make the entries of ``kind`` under ``ws/folder``: their paths, and the FIFOs."""
    at = ws / folder
    at.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(at / "pipe.md")
        return [f"{folder}/pipe.md"], [at / "pipe.md"]
    if kind == "fifo link":
        os.mkfifo(at / "pipe.fifo")
        (at / "pipe.md").symlink_to("pipe.fifo")
        os.mkfifo(at / "pipe2.md")
        (at / "pipe2-link.md").symlink_to("pipe2.md")
        names = [f"{folder}/pipe.md", f"{folder}/pipe2-link.md", f"{folder}/pipe2.md"]
        return names, [at / "pipe.fifo", at / "pipe2.md"]
    if kind == "socket":
        _socket_file(at / "sock.md")
        (at / "sock-link.md").symlink_to("sock.md")
        return [f"{folder}/sock.md", f"{folder}/sock-link.md"], []
    names = []
    for dev in ("zero", "urandom", "null", "tty", "stdin"):
        (at / f"{dev}.md").symlink_to(f"/dev/{dev}")
        names.append(f"{folder}/{dev}.md")
    try:  # a device node inside the workspace, where this process may make one
        os.mknod(at / "zero-node.md", 0o600 | 0o020000, os.makedev(1, 5))
        (at / "zero-node-link.md").symlink_to("zero-node.md")
        names += [f"{folder}/zero-node.md", f"{folder}/zero-node-link.md"]
    except OSError:
        pass
    return names, []


def _not_a_file(kind: str) -> Callable[[Path], tuple[bool, str]]:
    """``ocb init`` over the entries (in ``notes/``), then a daemon that reconciles
    with them at start and whose watcher sees more made (in ``notes/later/``): each is
    skipped with its reason, a later note is synced, queries are answered."""

    def trial(scratch: Path) -> tuple[bool, str]:
        ws, brain = example_brain(scratch)
        names, fifos = _entries(kind, ws, "notes")
        try:
            t0 = time.monotonic()
            init = run("init", "--brain", str(scratch / "b2"), "--workspace", str(ws), timeout=60)
            init_s = time.monotonic() - t0
            skipped = [n for n in names if f"skipped {n}: " in init.stderr]
            if init.returncode or len(skipped) != len(names):
                return False, f"ocb init exit {init.returncode}, skipped {skipped} of {names}"
            reasons = sorted({ln.split(": ", 2)[2] for ln in init.stderr.splitlines()
                              if ln.startswith("warning: skipped notes/")})  # fmt: skip
            with served(brain):
                more, later = _entries(kind, ws, "notes/later")
                fifos += later
                (ws / "notes" / "after.md").write_text("# After\n\nThe zebra crossing moved.\n")
                synced = _wait(lambda: _finds(brain, "zebra crossing", "notes/after.md"))
                seen = [n for n in names + more if f"skipped {n}: " in _log(brain)]
            held = bool(synced) and len(seen) == len(names + more)
            return held, (
                f"ocb init {init_s:.1f}s exit 0, skipped {len(names)} ({'; '.join(reasons)}); "
                f"daemon (reconcile and watcher) skipped {len(seen)}/{len(names + more)}, "
                f"later note {'synced' if synced else 'NOT synced'}"
            )
        except subprocess.TimeoutExpired:
            return False, "ocb init hung (killed after 60 s)"
        finally:
            _unblock(fifos)

    return trial


# --------------------------------------------------------------------------- memory_get


def _leaks(kind: str) -> Callable[[Path], tuple[bool, str]]:
    """A file reached through ``kind`` is neither indexed (the secret never enters the
    log) nor returned by the daemon's ``read`` (what ``memory_get`` calls)."""

    def trial(scratch: Path) -> tuple[bool, str]:
        ws, brain = example_brain(scratch)
        outside = scratch / "outside"
        outside.mkdir()
        notes = ws / "notes"
        if kind == ".env link":
            (ws / ".env").write_text(f"API_TOKEN={SECRET}\n")
            (notes / "envlink.md").symlink_to("../.env")
            (ws / ".git").mkdir()
            (ws / ".git" / "config").write_text(f"[remote]\n\turl = https://{SECRET}@x\n")
            (notes / "gitlink.md").symlink_to("../.git/config")
            paths = ["notes/envlink.md", "notes/gitlink.md"]
        elif kind == "hard link":
            (outside / "private.md").write_text(f"# Private\n\n{SECRET} lives here\n")
            os.link(outside / "private.md", notes / "hard.md")
            paths = ["notes/hard.md"]
        else:
            (notes / "blob.md").write_bytes(b"# x\x00\x01\x02" + SECRET.encode() * 10)
            paths = ["notes/blob.md"]
        with served(brain):
            (notes / "after.md").write_text("# After\n\nThe heron note.\n")
            synced = _wait(lambda: _finds(brain, "heron note", "notes/after.md"))
            answers = []
            for p in paths:
                try:
                    answers.append(("read", str(rpc(brain, "read", path=p))))
                except RpcError as exc:
                    answers.append(("refused", exc.message))
            why = _wait(lambda: [ln for ln in _log(brain).splitlines() if "skipped notes/" in ln])
        leaked = [a for a in answers if a[0] == "read" or SECRET in a[1]]
        in_log = SECRET.encode() in _log_bytes(brain)
        held = bool(synced) and not leaked and not in_log
        reasons = sorted({a[1].split(": ", 1)[-1] for a in answers})
        skips = sorted({ln.split(": ", 2)[-1] for ln in (why or [])})
        return held, (
            f"memory_get refused {len(answers) - len(leaked)}/{len(answers)} "
            f"({'; '.join(reasons)}); sync skipped ({'; '.join(skips)}); secret in log: {in_log}"
        )

    return trial


# --------------------------------------------------------------------------- big notes


def big_note(size: int, seed: int = 7) -> str:
    """A daily-log-like Markdown note of about ``size`` bytes: timed sections of
    sentences drawn from a small vocabulary (seeded)."""
    rng = random.Random(seed)
    parts: list[str] = ["# A very long log\n"]
    n = len(parts[0])
    i = 0
    while n < size:
        i += 1
        words = [rng.choice(WORDS) for _ in range(rng.randint(40, 90))]
        para = f"\n## {i // 60:02d}:{i % 60:02d}\n\n" + " ".join(words) + ".\n"
        parts.append(para)
        n += len(para)
    return "".join(parts)[:size]


class Prober:
    """Threads that time requests while a big file syncs: recorded queries (writes: the
    writer runs them), and ``read`` of a small note (a read beside the writer)."""

    def __init__(self, brain: Path) -> None:
        self.brain = brain
        self.stop = threading.Event()
        self.times: dict[str, list[tuple[float, float]]] = {"query": [], "read": []}
        self.failed: list[str] = []
        self._threads = [
            threading.Thread(target=self._loop, args=(k,), daemon=True) for k in self.times
        ]

    def _loop(self, kind: str) -> None:
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                if kind == "query":
                    rpc(self.brain, "query", text="how do I roll back a bad deploy")
                else:
                    rpc(self.brain, "read", path="runbooks/rollback.md", lines=5)
            except RpcError as exc:
                self.failed.append(f"{kind}: {exc.message}")
            self.times[kind].append((t0, time.monotonic() - t0))
            time.sleep(0.05)

    @contextmanager
    def running(self) -> Iterator[Prober]:
        for t in self._threads:
            t.start()
        try:
            yield self
        finally:
            self.stop.set()
            for t in self._threads:
                t.join()

    def during(self, kind: str, start: float, end: float) -> list[float]:
        """Latencies of requests of ``kind`` that were running at some time in
        [start, end] (seconds)."""
        return [d for t0, d in self.times[kind] if t0 <= end and t0 + d >= start]


_NO_AHEAD = (
    "import ocb.daemon.watcher as w; w.AHEAD_MIN_CHARS = 1 << 62; "
    "from ocb.entry import main; main()"
)
"""A daemon that embeds every file's chunks on its writer thread (as before
``embed_ahead``), for the before/after measure."""


@contextmanager
def _serving(brain: Path, *, ahead: bool) -> Iterator[None]:
    if ahead:
        with served(brain):
            yield
        return
    argv = [sys.executable, "-c", _NO_AHEAD, "serve", "--brain", str(brain)]
    proc = subprocess.Popen(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: connect(brain) is not None or proc.poll() is not None)
        yield
    finally:
        run("serve", "stop", "--brain", str(brain))
        proc.wait()


def stall(
    scratch: Path,
    size: int,
    limit: int | None,
    *,
    append: bool = False,
    ahead: bool = True,
    embedder: str = "",
) -> dict[str, Any]:
    """Write a ``size``-byte note into a served example brain (``indexing.max_file_bytes``
    set to ``limit`` first when given) while queries and reads are timed (``append``:
    the note is indexed first, then a line is added to it, as to a daily log; ``ahead``
    False: a daemon that embeds on its writer); returns the latencies before and during
    its sync, how long it took, the daemon's RSS before and after. ``embedder``: the
    brain's (``ocb init --embedder``), the built-in one by default."""
    if embedder:
        ws, brain = scratch / "workspace", scratch / "brain"
        shutil.copytree(EXAMPLE, ws)
        run("init", "--brain", str(brain), "--workspace", str(ws), "--embedder", embedder)
    else:
        ws, brain = example_brain(scratch)
    if limit is not None:
        run("config", "--brain", str(brain), "indexing.max_file_bytes", str(limit))
    text = big_note(size)
    big = ws / "notes" / "big.md"
    if append:
        big.write_text(text)
        run("init", "--brain", str(brain), "--workspace", str(ws), timeout=900)
        text += "\n## Later\n\nOne more line about the canary.\n"
    with _serving(brain, ahead=ahead):
        prober = Prober(brain)
        with prober.running():
            time.sleep(2.0)  # a baseline
            syncs = rpc(brain, "status")["syncs"]
            rss0 = rpc(brain, "status")["rss_bytes"]
            t0 = time.monotonic()
            big.write_text(text)
            done = _wait(lambda: rpc(brain, "status")["syncs"] > syncs, 900)
            t1 = time.monotonic()
            time.sleep(1.0)
        status = rpc(brain, "status")
    out: dict[str, Any] = {"size": size, "limit": limit, "sync_s": t1 - t0, "done": bool(done)}
    out.update(append=append, ahead=ahead, rss_mb=status["rss_bytes"] / 1e6)
    out["rss_before_mb"] = rss0 / 1e6
    out["skipped"] = "skipped notes/big.md" in _log(brain)
    out["failed"] = prober.failed
    for kind in ("query", "read"):
        base = [d for t, d in prober.times[kind] if t < t0]
        hit = prober.during(kind, t0, t1)
        out[kind] = {
            "base_median_ms": 1000 * statistics.median(base) if base else 0.0,
            "during_median_ms": 1000 * statistics.median(hit) if hit else 0.0,
            "during_max_ms": 1000 * max(hit) if hit else 0.0,
            "n_during": len(hit),
        }
    return out


def _describe(m: dict[str, Any]) -> str:
    q, r = m["query"], m["read"]
    what = f"{m['size'] / 1e6:.1f} MB note{' (a line added)' if m['append'] else ''}"
    return (
        f"{what}, sync {m['sync_s']:.1f}s; queries: {q['n_during']} during it, median "
        f"{q['base_median_ms']:.0f}->{q['during_median_ms']:.0f} ms, longest wait "
        f"{q['during_max_ms']:.0f} ms; reads: median {r['base_median_ms']:.0f}->"
        f"{r['during_median_ms']:.0f} ms, longest {r['during_max_ms']:.0f} ms; "
        f"RSS {m['rss_before_mb']:.0f}->{m['rss_mb']:.0f} MB"
    )


def compare(sizes: list[int], *, append: bool, rounds: int = 3, embedder: str = "") -> list[str]:
    """Before (embedding on the writer) and after (``embed_ahead``), alternated in one
    run, ``rounds`` each per size: the medians over rounds and their ratio."""
    import tempfile

    lines = []
    for size in sizes:
        got: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
        for _ in range(rounds):
            for ahead in (False, True):
                with tempfile.TemporaryDirectory() as d:
                    m = stall(Path(d), size, size + 1000, append=append, ahead=ahead,
                              embedder=embedder)  # fmt: skip
                    got[ahead].append(m)
        row = [f"{size / 1e6:.1f} MB{' +line' if append else ''} {embedder or 'hash'}"]
        for label, key in (
            ("query longest wait ms", lambda m: m["query"]["during_max_ms"]),
            ("queries during sync", lambda m: m["query"]["n_during"]),
            ("read longest wait ms", lambda m: m["read"]["during_max_ms"]),
            ("sync s", lambda m: m["sync_s"]),
            ("RSS after MB", lambda m: m["rss_mb"]),
        ):
            before = statistics.median(key(m) for m in got[False])
            after = statistics.median(key(m) for m in got[True])
            ratio = before / after if after else float("inf")
            row.append(f"{label} {before:.0f} -> {after:.0f} ({ratio:.2f}x)")
        lines.append("; ".join(row))
    return lines


def _big_default(scratch: Path) -> tuple[bool, str]:
    """A 50 MB note under the default limit: skipped with a warning, nothing waits."""
    m = stall(scratch, 50_000_000, None)
    held = m["done"] and m["skipped"] and not m["failed"] and m["query"]["during_max_ms"] < 1000
    return held, ("skipped with a warning; " if m["skipped"] else "NOT skipped; ") + _describe(m)


def _near_limit(scratch: Path) -> tuple[bool, str]:
    """A note just under the default limit syncs while queries and reads go on: held
    when it is indexed, no request fails, and no query waits for half the sync."""
    from ocb.settings import Indexing

    m = stall(scratch, Indexing().max_file_bytes - 1000, None)
    waited = m["query"]["during_max_ms"] / 1000
    held = m["done"] and not m["skipped"] and not m["failed"] and waited < m["sync_s"] / 2
    return held, _describe(m) + (f"; {len(m['failed'])} failed" if m["failed"] else "")


TRIALS: list[Trial] = [
    Trial("fifo", "a FIFO notes/pipe.md hangs ocb init and the writer", _not_a_file("fifo")),
    Trial("fifo link", "a .md symlink to a FIFO hangs the writer", _not_a_file("fifo link")),
    Trial("socket", "a socket file named .md (and a link to it)", _not_a_file("socket")),
    Trial(
        "dev links",
        ".md links to /dev/zero, /dev/urandom, /dev/tty; a device node",
        _not_a_file("dev"),
    ),
    Trial(
        ".env link",
        "memory_get of notes/envlink.md -> ../.env, a link to .git/config",
        _leaks(".env link"),
    ),
    Trial(
        "hard link",
        "memory_get of a hard link to a file outside the workspace",
        _leaks("hard link"),
    ),
    Trial("binary", "memory_get of a binary .md the sync skipped", _leaks("binary")),
    Trial("big 50 MB", "a 50 MB note under the default size limit", _big_default),
    Trial("big near limit", "other requests while a note just under the limit syncs", _near_limit),
]


def main(argv: list[str]) -> None:
    import tempfile

    embedder, rounds = "", 3
    if "--embedder" in argv:
        at = argv.index("--embedder")
        embedder, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    if "--rounds" in argv:
        at = argv.index("--rounds")
        rounds, argv = int(argv[at + 1]), argv[:at] + argv[at + 2 :]
    if argv[:1] in (["--compare"], ["--compare-append"]):
        sizes = [int(float(mb) * 1e6) for mb in argv[1:]]
        append = argv[0] == "--compare-append"
        for line in compare(sizes, append=append, rounds=rounds, embedder=embedder):
            print(line, flush=True)
        return
    if argv[:1] in (["--stall"], ["--append"]):
        for mb in argv[1:]:
            size = int(float(mb) * 1e6)
            with tempfile.TemporaryDirectory() as d:
                m = stall(Path(d), size, size + 1000, append=argv[0] == "--append")
                print(_describe(m), flush=True)
        return
    for t in TRIALS:
        if argv and not any(w in t.name for w in argv):
            continue
        with tempfile.TemporaryDirectory() as d:
            t0 = time.monotonic()
            held, detail = t.fn(Path(d))
            print(f"{'held' if held else 'FAILED':6} {t.name:15} {time.monotonic() - t0:5.1f}s"
                  f"  {detail}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
