"""Abuse trials of the log's hash chain on a brain served by a real daemon: records
edited on disk with their checksum fixed (in their payload, in any field, together with
their own chain value) and a whole history rewritten with a consistent chain. The
daemon is stopped first (it holds the writer lock), the log is edited, and then the
daemon is started again and ``ocb verify`` / ``ocb verify --repair`` are run.
``TRIALS`` is run by ``bench_reliability.py --live``; run alone:

    .venv/bin/python benchmarks/abuse_log.py              # every trial, once
    .venv/bin/python benchmarks/abuse_log.py rewrite      # those whose name has a word
"""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.abuse_support import ENV, Trial, example_brain, run  # noqa: E402
from benchmarks.live_support import ocb, served  # noqa: E402
from ocb_events.codec import encode_record  # noqa: E402
from ocb_events.frames import (  # noqa: E402
    CURRENT,
    LENGTH_MASK,
    REDACTED,
    ZERO_CHAIN,
    content_digest,
    digest,
    frame_header,
    frame_records,
    link,
    scan_offsets,
)
from ocb_events.log import SegmentLog  # noqa: E402
from ocb_events.marks import Tail  # noqa: E402
from ocb_events.schema import KgFactSet, Record  # noqa: E402
from ocb_events.segments import list_segments  # noqa: E402

__all__ = ["TRIALS"]

SUBJECT = "Discord API"
CHAIN_AT, PAYLOAD_AT = 24, CURRENT.frame_size
FIELDS = ("payload", "ts", "chain", "redacted", "seq")


# --------------------------------------------------------------------------- editing the log


def _frame(log: Path, seq: int) -> tuple[Path, int, int]:
    seg = next(s for s in reversed(list_segments(log)) if s.first_seq <= seq)
    off = scan_offsets(seg.path, seg.first_seq, CURRENT)[seq - seg.first_seq]
    word = struct.unpack_from("<I", seg.path.read_bytes(), off + 4)[0]
    return seg.path, off, off + PAYLOAD_AT + (word & LENGTH_MASK)


def _edit(log: Path, seq: int, edit: Callable[[bytearray], None]) -> None:
    """Apply ``edit`` to record ``seq``'s frame and fix its crc."""
    path, off, end = _frame(log, seq)
    data = bytearray(path.read_bytes())
    frame = bytearray(data[off:end])
    edit(frame)
    frame[:4] = struct.pack("<I", zlib.crc32(bytes(frame[4:])))
    data[off:end] = frame
    path.write_bytes(bytes(data))


def _chain(log: Path, seq: int) -> bytes:
    if seq == 0:
        return ZERO_CHAIN
    path, off, _ = _frame(log, seq)
    return path.read_bytes()[off + CHAIN_AT : off + PAYLOAD_AT]


def _replace(log: Path, seq: int, old: bytes, new: bytes, *, rechain: bool) -> None:
    prev = _chain(log, seq - 1)

    def edit(frame: bytearray) -> None:
        frame[PAYLOAD_AT:] = bytes(frame[PAYLOAD_AT:]).replace(old, new)
        if rechain:
            info = frame_header(bytes(frame), 0, len(frame), CURRENT)
            assert info is not None
            chain = link(prev, info.seq, info.ts, content_digest(bytes(frame), info))
            frame[CHAIN_AT:PAYLOAD_AT] = chain

    _edit(log, seq, edit)


def _tamper(log: Path, seq: int, field: str, rng: random.Random) -> None:
    def edit(frame: bytearray) -> None:
        if field == "payload":
            frame[rng.randrange(PAYLOAD_AT, len(frame))] ^= 1 << rng.randrange(8)
        elif field == "ts":
            struct.pack_into("<q", frame, 16, struct.unpack_from("<q", frame, 16)[0] + 1)
        elif field == "chain":
            frame[CHAIN_AT + rng.randrange(16)] ^= 0x40
        elif field == "redacted":
            struct.pack_into("<I", frame, 4, struct.unpack_from("<I", frame, 4)[0] ^ REDACTED)
        else:
            struct.pack_into("<Q", frame, 8, seq + 7919)

    _edit(log, seq, edit)


def _rewrite(log: Path, forge: Callable[[Record], Record]) -> None:
    """The whole history through ``forge``, with a consistent chain and TAIL (one
    segment, as the example brain has)."""
    with SegmentLog(log, writer=False) as reader:
        recs = [forge(r) for r in reader.read()]
    (seg,) = list_segments(log)
    frames, chain = frame_records(recs, ZERO_CHAIN)
    data = CURRENT.header.pack(CURRENT.magic, 1, ZERO_CHAIN) + b"".join(frames)
    seg.path.write_bytes(data)
    last = recs[-1]
    tail = Tail(1, len(data), last.seq, last.ts, chain, zlib.crc32(data))
    (log / "TAIL").write_bytes(tail.encode())


# --------------------------------------------------------------------------- the brain


def _facts(brain: Path) -> dict[str, int]:
    """Three statements of a fact through the daemon; their seqs by value."""
    seqs = {}
    for value in ("100/min", "120/min", "150/min"):
        got = run("kg", "set", SUBJECT, "rate_limit", value, "--brain", str(brain), "--json")
        seqs[value] = json.loads(got.stdout)["seq"]
    return seqs


def _values(brain: Path) -> list[str]:
    got = run("kg", "history", SUBJECT, "rate_limit", "--brain", str(brain), "--json")
    return [s["value"] for p in json.loads(got.stdout)["predicates"] for s in p["statements"]]


def _head(brain: Path) -> str:
    got = run("verify", "--brain", str(brain), "--json")
    head = json.loads(got.stdout)["head"]
    return str(head["text"]) if head else ""


def _serve_refused(brain: Path) -> str:
    """Start ``ocb serve`` on a brain whose log is edited: the first line it fails with
    ("" when it served)."""
    try:
        got = subprocess.run(
            ocb("serve", "--brain", str(brain)), env=ENV, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        run("serve", "stop", "--brain", str(brain))
        return ""
    return got.stderr.splitlines()[0] if got.returncode else ""


def _served_values(brain: Path) -> list[str]:
    with served(brain):
        return _values(brain)


# --------------------------------------------------------------------------- trials


def _payload_crc_fixed(scratch: Path) -> tuple[bool, str]:
    _, brain = example_brain(scratch)
    with served(brain):
        seqs = _facts(brain)
    seq = seqs["120/min"]
    _replace(brain / "log", seq, b"120/min", b"999/min", rechain=False)
    refused = _serve_refused(brain)
    before = run("verify", "--brain", str(brain))
    repaired = run("verify", "--brain", str(brain), "--repair", "--json")
    tampered = json.loads(repaired.stdout)["repair"]["tampered"]
    after = run("verify", "--brain", str(brain))
    values = _served_values(brain)
    held = (
        f"log corrupt at seq {seq}" in refused
        and before.returncode == 1
        and f"log corrupt at seq {seq}" in before.stdout
        and tampered == [{"first": seq, "last": seq}]
        and after.returncode == 0
        and values == ["100/min", "150/min"]
    )
    return held, (
        f"serve refused ({refused[:60]}...); verify named seq {seq}; repair tombstoned "
        f"{tampered}; verify after: exit {after.returncode}; served history {values}"
    )


def _payload_and_chain(scratch: Path) -> tuple[bool, str]:
    _, brain = example_brain(scratch)
    with served(brain):
        seqs = _facts(brain)
    seq = seqs["120/min"]
    kept = f"{seq}:{_chain(brain / 'log', seq).hex()}"
    _replace(brain / "log", seq, b"120/min", b"999/min", rechain=True)
    before = run("verify", "--brain", str(brain))
    repaired = json.loads(run("verify", "--brain", str(brain), "--repair", "--json").stdout)
    check = run("verify", "--brain", str(brain), "--head", kept)
    values = _served_values(brain)
    held = (
        f"log corrupt at seq {seq + 1}" in before.stdout
        and repaired["repair"]["tampered"] == [{"first": seq + 1, "last": seq + 1}]
        and repaired["repair"]["unconfirmed"] == [seq]
        and check.returncode == 1
        and f"FAIL  head {seq}: the chain at seq {seq} is" in check.stdout
    )
    return held, (
        f"verify named seq {seq + 1}; repair tombstoned {repaired['repair']['tampered']} "
        f"and named seq {repaired['repair']['unconfirmed']} unconfirmed (the two cannot be "
        f"told apart); the edited record keeps its editor's chain: --head {seq}:... exit "
        f"{check.returncode}; served history {values}"
    )


def _disguised_as_redaction(scratch: Path) -> tuple[bool, str]:
    """A kg record rewritten as a "redaction" that keeps its digest, so it still links."""
    _, brain = example_brain(scratch)
    with served(brain):
        seqs = _facts(brain)
    seq = seqs["120/min"]
    with SegmentLog(brain / "log", writer=False) as reader:
        rec = next(iter(reader.read(seq, seq)))
    assert isinstance(rec.event, KgFactSet)
    event = KgFactSet(
        subject=rec.event.subject, predicate=rec.event.predicate, value="999/min",
        source=rec.event.source,
    )  # fmt: skip
    forged = encode_record(Record(seq=rec.seq, ts=rec.ts, actor=rec.actor, event=event))

    def disguise(frame: bytearray) -> None:
        word = struct.unpack_from("<I", frame, 4)[0]
        payload = digest(bytes(frame[PAYLOAD_AT:])) + forged
        frame[PAYLOAD_AT:] = payload
        struct.pack_into("<I", frame, 4, (word & ~LENGTH_MASK) | REDACTED | len(payload))

    _edit(brain / "log", seq, disguise)
    before = run("verify", "--brain", str(brain))
    repaired = json.loads(run("verify", "--brain", str(brain), "--repair", "--json").stdout)
    values = _served_values(brain)
    held = (
        f"log corrupt at seq {seq} " in before.stdout
        and "no later content_forgotten record names it" in before.stdout
        and repaired["repair"]["tampered"] == [{"first": seq, "last": seq}]
        and values == ["100/min", "150/min"]
    )
    return held, (
        f"verify: {before.stdout.splitlines()[0][6:90]}...; repair tombstoned "
        f"{repaired['repair']['tampered']}; served history {values}"
    )


def _rewrite_consistent(scratch: Path) -> tuple[bool, str]:
    _, brain = example_brain(scratch)
    with served(brain):
        seqs = _facts(brain)
    kept = _head(brain)
    seq = seqs["120/min"]

    def forge(r: Record) -> Record:
        if r.seq == seq and isinstance(r.event, KgFactSet):
            event = KgFactSet(
                subject=r.event.subject, predicate=r.event.predicate, value="999/min",
                source=r.event.source,
            )  # fmt: skip
            return Record(seq=r.seq, ts=r.ts, actor=r.actor, event=event)
        return r

    _rewrite(brain / "log", forge)
    for snap in (brain / "snapshots").glob("*.snap"):
        snap.unlink()
    for cache in (brain / "cache").glob("*"):
        cache.unlink()
    plain = run("verify", "--brain", str(brain))
    values = _served_values(brain)
    check = run("verify", "--brain", str(brain), "--head", kept)
    fails = [line for line in check.stdout.splitlines() if line.startswith("FAIL")]
    last = kept.split(":")[0]
    held = (
        check.returncode == 1
        and len(fails) == 1
        and fails[0].startswith(f"FAIL  head {last}: the chain at seq {last} is ")
    )
    return held, (
        f"plain verify exit {plain.returncode} (undetectable inside); served {values}; "
        f"--head {last}:... exit {check.returncode}: {fails[0][:70] if fails else ''}..."
    )


def _any_field(scratch: Path, rounds: int = 24, seed: int = 7) -> tuple[bool, str]:
    """Rounds of one record tampered in a random field at a random seq, the daemon
    stopped and started around each: the record is a tombstone (or, for its chain value
    alone, itself), every other record is unchanged."""
    _, brain = example_brain(scratch)
    rng = random.Random(seed)
    with served(brain):
        _facts(brain)
    bad: list[str] = []
    t0 = time.monotonic()
    for _ in range(rounds):
        events = _events(brain)
        seq, field = rng.randrange(1, len(events) + 1), rng.choice(FIELDS)
        _tamper(brain / "log", seq, field, rng)
        named = run("verify", "--brain", str(brain))
        got = json.loads(run("verify", "--brain", str(brain), "--repair", "--json").stdout)
        after = _events(brain)
        lost = after[seq - 1]["event"]["type"] == "record_lost"
        others = after[: seq - 1] == events[: seq - 1] and after[seq : len(events)] == events[seq:]
        ok = (
            named.returncode == 1
            and got["ok"]
            and others
            and (lost or (field == "chain" and after[seq - 1] == events[seq - 1]))
        )
        if not ok:
            bad.append(f"{field}@{seq}")
        with served(brain):
            pass  # the daemon starts on the repaired brain
    return not bad, (
        f"{rounds} rounds ({', '.join(sorted(set(FIELDS)))}) in {time.monotonic() - t0:.0f}s; "
        f"broken: {bad or 'none'}"
    )


def _events(brain: Path) -> list[dict[str, object]]:
    got = run("events", "--brain", str(brain), "--since", "0")
    return [json.loads(line) for line in got.stdout.splitlines() if line.strip()]


TRIALS: list[Trial] = [
    Trial(
        "tamper payload",
        "a kg value edited in the log, its crc fixed, the chain left: verify, repair, serve",
        _payload_crc_fixed,
    ),
    Trial(
        "tamper payload+chain",
        "a kg value edited with its crc and its own chain value fixed",
        _payload_and_chain,
    ),
    Trial(
        "tamper as redaction",
        "a kg record rewritten as a redacted frame keeping the digest it replaced",
        _disguised_as_redaction,
    ),
    Trial(
        "rewrite consistent",
        "the whole history rewritten with a consistent chain and TAIL: only a head kept "
        "elsewhere shows it",
        _rewrite_consistent,
    ),
    Trial(
        "tamper any field",
        "24 rounds: one record edited in payload, ts, chain, flags or seq, crc fixed",
        _any_field,
    ),
]


def main(argv: list[str]) -> None:
    import tempfile

    for t in TRIALS:
        if argv and not any(w in t.name for w in argv):
            continue
        with tempfile.TemporaryDirectory() as d:
            t0 = time.monotonic()
            held, detail = t.fn(Path(d))
            print(f"{'held' if held else 'FAILED':6} {t.name:20} {time.monotonic() - t0:5.1f}s"
                  f"  {detail}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
