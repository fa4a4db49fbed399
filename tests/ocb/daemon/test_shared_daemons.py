"""Two daemons on two brain directories that share one log in PostgreSQL: both serve
queries and learn at once, each folds what the other records (its trace can be
learned from on the other side), a server restart in the middle loses nothing, and
both end with the projections a rebuild of the shared log gives."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb.daemon.protocol import RpcError
from ocb.shared_log import attach
from ocb_events.clock import TickClock
from ocb_events.pg.conn import Target
from replay import PROJECTIONS, rebuild
from tests.ocb.daemon.support import daemon, ocb, rpc, stop, wait_for
from tests.ocb.support import fresh_copy
from tests.pg_server import PgServer

ROUNDS = 5
QUESTIONS = ["roll back a bad deploy", "rate limit", "who owns billing", "deploy checklist"]


def _client(brain: Path, n: int, out: list[str]) -> None:
    for r in range(ROUNDS):
        ans = rpc(brain, "query", text=QUESTIONS[(n + r) % 4], chat_id=f"c{n}", top=3)
        rid = f"b{n}-r{r}"
        rule = "pg" if r % 2 else "route"
        rpc(brain, "learn", outcome=1.0 if r % 3 else -1.0, trace_id=ans["trace_id"],
            request_id=rid, rule=rule)  # fmt: skip
        out.append(rid)


def _states(brain: Path) -> tuple[dict[str, bytes], dict[str, bytes]]:
    with Brain(brain, writer=False) as b:
        held = {n: PROJECTIONS[n].snapshot(b.state(n)) for n in sorted(PROJECTIONS)}
        full = rebuild(b.log)
        return held, {n: PROJECTIONS[n].snapshot(full[n]) for n in sorted(PROJECTIONS)}


def test_two_daemons_on_one_shared_log(tmp_path: Path) -> None:
    server = PgServer()  # its own: it is restarted
    try:
        _two_daemons(server, tmp_path)
    finally:
        server.start()
        server.cleanup()


def _two_daemons(server: PgServer, tmp_path: Path) -> None:
    url = server.url("shared")
    brains = [tmp_path / "b1", tmp_path / "b2"]
    for i, b in enumerate(brains):
        ws = fresh_copy(tmp_path / f"ws{i + 1}")
        attach(b, url, ws)
        Brain.init(b, ws, clock=TickClock())[0].close()
    got: list[str] = []
    with daemon(brains[0]) as p1, daemon(brains[1]) as p2:
        threads = [threading.Thread(target=_client, args=(b, n, got)) for n, b in enumerate(brains)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # one side's trace, learned from on the other once it has folded it
        ans = rpc(brains[0], "query", text="deploy checklist", top=3)
        end = rpc(brains[0], "status")["seq"]
        wait_for(lambda: rpc(brains[1], "status")["seq"] >= end, "the other daemon to fold")
        rpc(brains[1], "learn", outcome=1.0, trace_id=ans["trace_id"], request_id="cross")
        got.append("cross")
        shown = Target.parse(url).safe  # the URL as printed: no password, ever
        st = rpc(brains[1], "status")
        assert st["log"] == shown and st["log_reachable"] and st["log_catch_ups"] >= 1
        assert rpc(brains[0], "status")["log"] == shown
        server.stop()  # writes fail with one line; the daemons keep serving reads
        wait_for(lambda: not rpc(brains[0], "status")["log_reachable"], "the listener to notice")
        text = ocb("serve", "status", "--brain", str(brains[0])).stdout
        assert f"  log       {shown}: NOT ANSWERING (reads go on)" in text
        with pytest.raises(RpcError) as info:
            rpc(brains[0], "query", text="rate limit", top=2)
        assert "is unavailable" in str(info.value) and "\n" not in str(info.value)
        assert "nothing was recorded" in info.value.hint
        assert rpc(brains[0], "search", text="rate limit", top=2, record=False)["results"]
        server.start()
        _client(brains[1], 7, got)  # reconnected by itself
        wait_for(lambda: rpc(brains[0], "status")["log_reachable"], "the listener to reconnect")
        end = rpc(brains[1], "status")["seq"]
        wait_for(lambda: rpc(brains[0], "status")["seq"] >= end, "a fold after the restart")
        assert stop(p1) == 0 and stop(p2) == 0
    (held1, full1), (held2, full2) = _states(brains[0]), _states(brains[1])
    assert held1 == full1 == held2 == full2
    with Brain(brains[0], writer=False) as b:
        outcomes = sorted(r.event.request_id for r in b.events(types=["outcome_recorded"]))  # type: ignore[attr-defined]
        assert outcomes == sorted(got)
