"""Sixteen clients each running a query -> learn loop: every learn is recorded once,
writes are committed in groups, and the graph equals a rebuild from the log."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from pathlib import Path

from ocb.brain import Brain
from ocb.daemon.protocol import call, connect
from tests.ocb.daemon.support import daemon, rpc, stop

CLIENTS = 16
ROUNDS = 6
QUESTIONS = ["roll back a bad deploy", "rate limit", "who owns billing", "deploy checklist"]


def _client(brain: Path, n: int, out: list[tuple[str, str]]) -> None:
    sock = connect(brain, timeout=120.0)
    assert sock is not None
    with sock, ExitStack() as stack:
        reader = stack.enter_context(sock.makefile("rb"))
        for r in range(ROUNDS):
            q = QUESTIONS[(n + r) % len(QUESTIONS)]
            ans = call(sock, "query", {"text": q, "chat_id": f"c{n}", "top": 3}, reader=reader)
            rid = f"c{n}-r{r}"
            rule = "pg" if n % 2 else "route"
            call(sock, "learn", {"outcome": 1.0 if r % 3 else -1.0, "trace_id": ans["trace_id"],
                                 "request_id": rid, "rule": rule}, reader=reader)  # fmt: skip
            out.append((ans["trace_id"], rid))


def test_sixteen_clients_query_and_learn(built: Path) -> None:
    got: list[tuple[str, str]] = []
    with daemon(built) as proc:
        threads = [threading.Thread(target=_client, args=(built, n, got)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        status = rpc(built, "status")
        assert stop(proc) == 0
    assert len(got) == CLIENTS * ROUNDS
    assert status["groups"] < status["writes"]  # some writes shared a flush
    with Brain(built, writer=False) as b:
        outcomes = [r.event for r in b.events(types=["outcome_recorded"])]
        assert sorted(o.request_id for o in outcomes) == sorted(rid for _, rid in got)
        assert sorted(o.trace_id for o in outcomes) == sorted(t for t, _ in got)
        assert all(c.ok for c in b.check_projections()), [c for c in b.check_projections()]
