"""The shared log on PostgreSQL beyond the conformance suite: several writers at once,
writers killed mid-append, damage found by verification, a server restarted or
stopped under appends, connection errors as one line, blobs, notifications and
redaction. Every test runs against a real server (``tests.pg_server``)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from ocb_events.clock import TickClock
from ocb_events.codec import encode_record
from ocb_events.errors import LogConflict, LogCorrupt, LogTruncated, LogUnavailable
from ocb_events.frames import ZERO_CHAIN, digest, link
from ocb_events.log import SegmentLog
from ocb_events.pg import (
    Listener,
    PostgresLog,
    SharedBlobStore,
    Target,
    verify_postgres,
)
from ocb_events.schema import ConfigChanged, Event, Record
from tests.ocb_events.support import config_events
from tests.pg_server import PASSWORD, PgServer
from tests.strategies import event_lists
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def url(pg_server: PgServer) -> str:
    return pg_server.fresh_url()


@pytest.fixture
def own_server() -> Iterator[PgServer]:
    """A server of this test alone (it gets stopped and started)."""
    server = PgServer()
    try:
        yield server
    finally:
        server.start()
        server.cleanup()


def _table(pg: PgServer, log: PostgresLog) -> str:
    return f'"{log.target.schema}".records'


# ------------------------------------------------------------------ the same log as the others


def test_records_and_chains_equal_the_segment_logs(url: str, tmp_path: Path) -> None:
    ref = SegmentLog(tmp_path / "log", clock=TickClock())
    with ref, PostgresLog(url, clock=TickClock()) as log:
        for i in range(6):
            batch = config_events(i % 3 + 1, f"b{i}-")
            assert log.append(batch, actor="t") == ref.append(batch, actor="t")
        assert list(log.read()) == list(ref.read())
        assert list(log.read(light=True)) == list(ref.read(light=True))
        for seq in range(ref.last_seq + 1):
            assert log.chain_of(seq) == ref.chain_of(seq)
        assert [log.ts_of(s) for s in range(1, 4)] == [ref.ts_of(s) for s in range(1, 4)]
    with PostgresLog(url) as again:  # a second handle opens at the log's end
        assert (again.last_seq, again.last_ts) == (ref.last_seq, ref.last_ts)
        assert again.chain_of(again.last_seq) == ref.chain_of(ref.last_seq)
        assert verify_postgres(again).chain == ref.chain_of(ref.last_seq)


def test_a_stale_handle_conflicts_then_knows_the_new_end(url: str) -> None:
    a, b = PostgresLog(url), PostgresLog(url)
    with a, b:
        a.append(config_events(2), actor="a")
        assert b.last_seq == 0, "a handle's end moves only when it learns of new records"
        assert list(b.read()) == []
        with pytest.raises(LogConflict) as info:
            b.append(config_events(1), actor="b", expected_seq=0)
        assert (info.value.expected_seq, info.value.last_seq) == (0, 2)
        assert b.last_seq == 2 and [r.actor for r in b.read()] == ["a", "a"]
        assert b.append(config_events(1), actor="b", expected_seq=2)[0].seq == 3
        assert a.refresh() == 3


def test_ts_never_goes_below_another_writers_ts(url: str) -> None:
    late, early = PostgresLog(url, clock=lambda: 5_000), PostgresLog(url, clock=lambda: 10)
    with late, early:
        late.append(config_events(1), actor="late")
        assert early.append(config_events(1), actor="early")[0].ts == 5_000


def test_writers_at_once_share_one_gap_free_chain(url: str) -> None:
    """Four handles append from four threads without expectations: every batch lands
    whole, seqs run 1..n and the chain verifies."""
    logs = [PostgresLog(url) for _ in range(4)]
    acked: dict[int, list[Record]] = defaultdict(list)

    def work(k: int) -> None:
        for i in range(25):
            acked[k] += logs[k].append(config_events(i % 3 + 1, f"{k}:{i}:"), actor=f"w{k}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    logs[0].refresh()
    records = list(logs[0].read())
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert sorted(r.seq for recs in acked.values() for r in recs) == [r.seq for r in records]
    for recs in acked.values():
        assert all(r in records for r in recs)
    assert verify_postgres(logs[0]).records == len(records)
    for log in logs:
        log.close()


# ------------------------------------------------------------------ writers killed mid-append

CHILD = """
import random, sys
from ocb_events.pg import PostgresLog
from ocb_events.schema import ConfigChanged

url, run, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
log = PostgresLog(url)
print("open", flush=True)
for batch in range(1_000_000):
    size = rng.randint(1, 40)
    pad = "x" * rng.choice((0, 0, 100, 50_000))
    events = [ConfigChanged(key=f"{run}:{batch}:{i}:{size}", value=pad) for i in range(size)]
    recs = log.append(events, actor="child")
    print(recs[-1].seq, flush=True)
"""


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else "")}


def _start(url: str, run: int, seed: int) -> subprocess.Popen[str]:
    args = [sys.executable, "-c", CHILD, url, str(run), str(seed)]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line == "open\n", proc.communicate()[1]
    return proc


def _kill(proc: subprocess.Popen[str], after: int) -> list[int]:
    """Wait for ``after`` acknowledgements, SIGKILL, return every acknowledged seq (a
    line cut short by the kill is no acknowledgement)."""
    assert proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(after)]
    os.kill(proc.pid, signal.SIGKILL)
    # the rest from the same reader: ``communicate`` would read the pipe itself and
    # miss what ``readline`` had read ahead, starting at any place in a line
    rest = proc.stdout.read()
    _reap(proc)
    done = [ln for ln in lines + rest.splitlines(keepends=True) if ln.endswith("\n")]
    return [int(ln) for ln in done]


def _reap(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc`` if it still runs, wait for it and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _check_whole_batches(records: list[Record]) -> None:
    batches: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for rec in records:
        assert isinstance(rec.event, ConfigChanged)
        run, batch, _, _ = rec.event.key.split(":")
        batches[(run, batch)].append(rec)
    for key, recs in batches.items():
        size = int(recs[0].event.key.split(":")[3])  # type: ignore[union-attr]
        assert len(recs) == size, f"batch {key} is partly present"
        assert [r.seq for r in recs] == list(range(recs[0].seq, recs[0].seq + size))
        assert len({r.ts for r in recs}) == 1


def test_writers_killed_mid_append_lose_nothing_acknowledged(url: str) -> None:
    """Two writer processes append at once and are SIGKILLed at random moments, ten
    times over: every acknowledged append is in the log, no batch is partly present,
    seqs are gap-free and the chain verifies."""
    rng = random.Random(20_261_126)
    acked: list[int] = []
    for run in range(10):
        procs = [_start(url, run * 2 + k, rng.randrange(2**32)) for k in range(2)]
        try:
            for proc in procs:
                acked += _kill(proc, rng.randint(1, 30))
        finally:
            for proc in procs:
                _reap(proc)
    with PostgresLog(url) as log:
        records = list(log.read())
        assert [r.seq for r in records] == list(range(1, log.last_seq + 1))
        assert set(acked) <= {r.seq for r in records}
        _check_whole_batches(records)
        assert verify_postgres(log).last_seq == len(records)


# ------------------------------------------------------------------ damage


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            "UPDATE {t} SET payload = overlay(payload placing '\\x00'::bytea from 9) WHERE seq = 7",
            "hash chain",
        ),
        (
            "UPDATE {t} SET chain = '\\x00000000000000000000000000000000' WHERE seq = 7",
            "hash chain",
        ),
        ("UPDATE {t} SET ts = ts + 1 WHERE seq = 7", "hash chain"),
        ("DELETE FROM {t} WHERE seq = 7", "missing"),
    ],
    ids=["payload", "chain", "ts", "deleted"],
)
def test_verification_names_the_first_damaged_seq(
    pg_server: PgServer, url: str, change: str, reason: str
) -> None:
    with PostgresLog(url) as log:
        for i in range(5):
            log.append(config_events(3, f"b{i}-"), actor="t")
        assert verify_postgres(log).records == 15
        pg_server.sql(change.format(t=_table(pg_server, log)))
        with pytest.raises(LogCorrupt) as info:
            verify_postgres(log)
        assert info.value.seq == 7
        assert reason in info.value.message


def test_verification_finds_records_cut_from_the_end(pg_server: PgServer, url: str) -> None:
    with PostgresLog(url) as log:
        log.append(config_events(5), actor="t")
        pg_server.sql(f"DELETE FROM {_table(pg_server, log)} WHERE seq > 3")
        with pytest.raises(LogTruncated) as info:
            verify_postgres(log)
        assert (info.value.present, info.value.held) == (3, 5)


def test_a_payload_that_is_not_a_record_is_named(pg_server: PgServer, url: str) -> None:
    """A payload replaced along with its chain value (so the chain links) but that
    does not decode: verification still names it."""
    with PostgresLog(url) as log:
        log.append(config_events(1), actor="t")
        from ocb_events.frames import digest, link

        junk = b"\xc1not a record"
        chain = link(ZERO_CHAIN, 1, log.last_ts, digest(junk))
        pg_server.sql(
            f"UPDATE {_table(pg_server, log)} SET payload = %s, chain = %s WHERE seq = 1",
            (junk, chain),
        )
        pg_server.sql(f'UPDATE "{log.target.schema}".head SET chain = %s', (chain,))
        with pytest.raises(LogCorrupt) as info:
            verify_postgres(log)
        assert info.value.seq == 1 and "undecodable" in info.value.message


def test_redaction_keeps_the_chain(url: str) -> None:
    with PostgresLog(url, clock=TickClock()) as log:
        recs = log.append(config_events(3), actor="t")
        chain = log.chain_of(3)
        hidden = Record(seq=2, ts=recs[1].ts, actor="t", event=ConfigChanged(key="k1", value="x"))
        from ocb_events.codec import encode_record

        log.redact({2: encode_record(hidden)})
        assert list(log.read())[1] == hidden
        assert verify_postgres(log).chain == chain


# ------------------------------------------------------------------ the server goes away


def test_a_restart_under_appends_loses_nothing_and_the_log_reconnects(own_server: PgServer) -> None:
    url = own_server.url("ocb")
    log = PostgresLog(url)
    acked: list[Record] = []
    failed = 0
    for i in range(30):
        if i in (10, 20):
            own_server.stop()
            with pytest.raises(LogUnavailable) as info:
                log.append(config_events(2, f"lost{i}-"), actor="t")
            assert "\n" not in info.value.message and "nothing was recorded" in info.value.hint
            failed += 1
            own_server.start()
        acked += log.append(config_events(2, f"b{i}-"), actor="t")  # reconnects by itself
    assert failed == 2
    with PostgresLog(url) as fresh:
        assert list(fresh.read()) == acked
        assert verify_postgres(fresh).records == len(acked)
    log.close()


def test_a_stopped_server_is_one_line_and_reads_of_known_records_fail_cleanly(
    own_server: PgServer,
) -> None:
    url = own_server.url("ocb")
    with PostgresLog(url) as log:
        log.append(config_events(3), actor="t")
        own_server.stop()
        for call in (
            lambda: log.append(config_events(1), actor="t"),
            lambda: list(log.read()),
            lambda: log.refresh(),
            lambda: PostgresLog(url),
        ):
            with pytest.raises(LogUnavailable) as info:
                call()
            assert "\n" not in str(info.value)
            assert info.value.url == log.url
        assert log.last_seq == 3 and list(log.read(4)) == []  # nothing asked of the server
        own_server.start()
        assert log.append(config_events(1), actor="t")[0].seq == 4


def test_a_wrong_password_is_one_line_without_the_password(pg_server: PgServer) -> None:
    wrong = "wrong-Secret-9"
    with pytest.raises(LogUnavailable) as info:
        PostgresLog(pg_server.password_url(wrong))
    text = f"{info.value.message} {info.value.hint} {info.value!r}"
    assert "\n" not in info.value.message
    assert "password authentication failed" in info.value.message
    assert wrong not in text and PASSWORD not in text
    with PostgresLog(pg_server.password_url(PASSWORD, "pw")) as log:
        assert PASSWORD not in f"{log!r} {log.url} {log.target!r}"
        assert log.append(config_events(1), actor="t")[0].seq == 1


def test_an_unreachable_host_is_one_line() -> None:
    with pytest.raises(LogUnavailable) as info:
        PostgresLog("postgresql://someone:pw-xyz@127.0.0.1:1/brains?connect_timeout=2")
    assert "\n" not in info.value.message
    assert info.value.url == "postgresql://someone@127.0.0.1:1/brains?connect_timeout=2"
    assert "pw-xyz" not in info.value.message


def test_urls_keep_the_password_out_of_what_is_shown() -> None:
    t = Target.parse(
        "postgresql://al%40ice:p%3Ass@db.example:5433/brains?schema=team&sslmode=require"
    )
    assert t.safe == "postgresql://al%40ice@db.example:5433/brains?sslmode=require&schema=team"
    assert (t.schema, t.password, t.channel) == ("team", "p:ss", "ocb_team")
    assert "p:ss" not in repr(t) and "p%3Ass" not in t.conninfo
    assert Target.parse("postgres://h/db?password=zz").password == "zz"
    assert "zz" not in Target.parse("postgres://h/db?password=zz").safe


# ------------------------------------------------------------------ blobs and notifications


def test_blobs_live_in_the_database_and_are_cached_locally(url: str, tmp_path: Path) -> None:
    with PostgresLog(url) as a, PostgresLog(url) as b:
        mine = SharedBlobStore(tmp_path / "a", a)
        theirs = SharedBlobStore(tmp_path / "b", b)
        name = mine.put(b"vectors" * 100)
        assert mine.put(b"vectors" * 100) == name
        assert not theirs.path(name).exists() and theirs.exists(name)
        assert theirs.get(name, verify=True) == b"vectors" * 100
        assert theirs.path(name).exists(), "read once, then cached"


def test_an_append_notifies_listeners(url: str) -> None:
    with PostgresLog(url) as log, Listener(log.target) as listener:
        assert listener.wait(0) == 0, "a new listener asks its caller to refresh"
        assert listener.wait(0) is None
        log.append(config_events(3), actor="t")
        log.append(config_events(2), actor="t")
        seen: list[int] = []
        wait_for(lambda: seen.append(listener.wait(1) or 0) or max(seen) == 5, "seq 5 notified")
        assert set(seen) <= {0, 3, 5}


def test_a_notification_from_anyone_else_is_only_a_hint(url: str) -> None:
    from ocb_events.pg.conn import connect

    with PostgresLog(url) as log, Listener(log.target) as listener:
        assert listener.wait(0) == 0
        with connect(log.target) as other:  # any user of the database may notify
            for payload in ("not a seq", "-7", "1e9", ""):
                other.execute("SELECT pg_notify(%s, %s)", (log.target.channel, payload))
        seen: list[int] = []
        wait_for(lambda: seen.append(listener.wait(1) or 0) or len(seen) >= 2, "notified")
        assert set(seen) == {0}, "a payload naming no seq says: look at the log"
        log.append(config_events(2), actor="t")
        wait_for(lambda: listener.wait(1) == 2, "the next append is still notified")


def test_importing_the_product_does_not_import_the_driver() -> None:
    code = "import sys, ocb, ocb.store, ocb_events, ocb_events.pg; print('psycopg' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=True
    )
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ two brains, one log


class TwoHandles(RuleBasedStateMachine):
    """Two handles on one log (two brains) append with and without expectations,
    refresh and read, checked against ``model``: every acknowledged record, in order.
    A handle never sees past the end it knows; a stale expectation conflicts and moves
    that end on; the chain always links."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.logs = [PostgresLog(url, clock=TickClock(step_ns=7)) for _ in range(2)]
        self.model: list[Record] = []

    @rule(h=st.integers(0, 1), batch=event_lists, expect=st.booleans())
    def append(self, h: int, batch: list[Event], expect: bool) -> None:
        log = self.logs[h]
        known = log.last_seq
        if expect and known != len(self.model):
            with pytest.raises(LogConflict):
                log.append(batch, actor=f"h{h}", expected_seq=known)
            assert log.last_seq == len(self.model)
            return
        got = log.append(batch, actor=f"h{h}", expected_seq=known if expect else None)
        assert [r.seq for r in got] == list(
            range(len(self.model) + 1, len(self.model) + len(batch) + 1)
        )
        assert [r.event for r in got] == batch
        self.model.extend(got)
        assert log.last_seq == len(self.model) or not batch

    @rule(h=st.integers(0, 1))
    def refresh(self, h: int) -> None:
        assert self.logs[h].refresh() == len(self.model)

    @rule(h=st.integers(0, 1), lo=st.integers(-1, 40), hi=st.none() | st.integers(-1, 40))
    def read(self, h: int, lo: int, hi: int | None) -> None:
        log = self.logs[h]
        end = log.last_seq if hi is None else min(hi, log.last_seq)
        assert list(log.read(lo, hi)) == [r for r in self.model if lo <= r.seq <= end]

    @invariant()
    def ends_are_never_ahead(self) -> None:
        assert all(log.last_seq <= len(self.model) for log in self.logs)

    def teardown(self) -> None:
        chain = ZERO_CHAIN
        for rec in self.model:
            chain = link(chain, rec.seq, rec.ts, digest(encode_record(rec)))
        if self.model:
            assert verify_postgres(self.logs[0]).chain == chain
            assert all(a.ts <= b.ts for a, b in zip(self.model, self.model[1:], strict=False))
        for log in self.logs:
            log.close()


def test_two_handles_on_one_log(pg_server: PgServer) -> None:
    run_state_machine_as_test(
        lambda: TwoHandles(pg_server.fresh_url()),
        settings=settings(max_examples=40, stateful_step_count=20),
    )
