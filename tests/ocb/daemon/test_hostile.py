"""1,000 malformed or hostile frames: each gets an error answer or a closed
connection, the daemon goes on serving, and the log does not change."""

from __future__ import annotations

import json
import random
from pathlib import Path

import msgspec

from ocb.daemon.protocol import MAX_FRAME, TOO_LARGE
from tests.ocb.daemon.support import daemon, hello, raw, stop


def _log_bytes(brain: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((brain / "log").glob("*.seg"))}


def _frames(rng: random.Random) -> list[bytes]:
    """One of each kind of bad frame, then random ones."""
    kinds = [
        b"{not json",
        b"[1, 2, 3]",
        b'"just a string"',
        b"null",
        b'{"jsonrpc": "1.0", "id": 1, "method": "hello"}',
        b'{"jsonrpc": "2.0", "method": "hello"}',  # a notification
        b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "hello"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": 5}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "nope"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "query", "params": [1, 2]}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "query", "params": {"text": 5}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "learn", "params": {"outcome": "x"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "learn", "params": {"outcome": 1e999}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "learn", '
        b'"params": {"outcome": 1, "trace_id": "t999999"}}',
        b'{"jsonrpc": "2.0", "id": ' + b"9" * 400 + b', "method": "hello"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "events", "params": {"limit": -1}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "events", "params": {"since": 1e308}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "cli", "params": {"argv": "learn"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "cli", '
        b'"params": {"argv": ["learn", "--outcome", "x"], "protocol": 1}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "sql", '
        b'"params": {"statement": "DELETE FROM events"}}',
        b"\xff\xfe\x00garbage",
    ]
    out = list(kinds)
    while len(out) < 1000:
        base = bytearray(rng.choice(kinds))
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(base))
            base[i] = rng.randrange(256) if rng.random() < 0.5 else base[i]
        out.append(bytes(base).replace(b"\n", b" "))
    return out


def test_hostile_frames_get_errors_and_change_nothing(built: Path) -> None:
    rng = random.Random(13)
    with daemon(built) as proc:
        before = _log_bytes(built)
        seq = hello(built)["seq"]  # type: ignore[index]
        sock = raw(built)
        reader = sock.makefile("rb")
        answered = 0
        for frame in _frames(rng):
            sock.sendall(frame + b"\n")
            line = reader.readline()
            assert line, f"connection closed after {frame[:60]!r}"
            got = msgspec.json.decode(line)
            assert "error" in got or "result" in got
            answered += "error" in got
        assert answered > 900  # a few mutations are still valid reads (hello, events)
        reader.close()
        sock.close()
        # 20 MB on one line: an error, then the connection is closed
        sock = raw(built)
        sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "query", "params": {"text": "')
        try:
            sock.sendall(b"x" * (MAX_FRAME + 4 * 1024 * 1024))
        except OSError:
            pass  # the daemon may close before reading all of it
        reader = sock.makefile("rb")
        line = reader.readline()
        assert line == b"" or json.loads(line)["error"]["code"] == TOO_LARGE
        reader.close()
        sock.close()
        # half a frame, then gone
        for _ in range(20):
            sock = raw(built)
            sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "meth')
            sock.close()
        assert hello(built)["seq"] == seq  # type: ignore[index]
        assert stop(proc) == 0
    assert _log_bytes(built) == before
