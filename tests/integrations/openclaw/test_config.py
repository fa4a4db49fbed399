"""Every key of the plugin's config (the README's table) in the real host, with and
without it, under ``openclaw agent --local`` (a process per turn, whose first request
starts the daemon) and through a gateway (whose service starts it). The keys are grouped
into three configurations, each run both ways over its own copy of the example
workspace, two turns each (a success that searches, reads and answers; a failure):

- ``defaults``: no key at all (``ocb`` found on PATH);
- ``every``: every key set away from its default (``brain`` as ``~/...``, the path
  that failed once registration was over);
- ``off``: the switches off (``inject``, ``capture``, ``learnFromOutcomes``).

``timeoutMs`` is checked against a socket that never answers, under ``--local``."""

from __future__ import annotations

import json
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.openclaw.fake_llm import FakeLlm, Script
from tests.integrations.openclaw.host import (
    ROOT,
    Gateway,
    clean_tmp_openclaw,
    events,
    free_port,
    hello,
    ocb_wrapper,
    rpc,
    silent_daemon,
    stop_daemon,
    write_config,
)
from tests.integrations.openclaw.seen import (
    facts_saying,
    key,
    tool_results,
    tool_texts,
    turn_requests,
    user_text,
)
from tests.waiting import wait_for

EXTRACTOR = (
    "import sys\n"
    "lines = sys.stdin.read().strip().splitlines()\n"
    "print('Extractor noted: ' + lines[-1])\n"
)
QUESTION = "how do I roll back a bad deploy"
Call = tuple[str, dict[str, Any]]
SEARCH: Call = ("memory_search", {"query": QUESTION})
READ: Call = ("memory_get", {"path": "runbooks/rollback.md", "from": 1, "lines": 200})
LIST: Call = ("ls", {})


@dataclass
class Case:
    """One configuration in one mode: the host, the workspace the brain indexes, the
    agent's workspace, the brain and the config given."""

    name: str
    gateway: Gateway
    workspace: Path
    agent: Path
    brain: Path
    config: dict[str, Any]
    local: bool

    def turn(self, session_key: str, message: str, *, ok: bool = True) -> dict[str, Any]:
        return self.gateway.turn(session_key, message, local=self.local, ok=ok)

    def ended(self, session_key: str) -> str:
        """The plugin's line for the end of the session's run (agent_end is done)."""
        mark = f"ocb-memory: run of {session_key} ended: "

        def line() -> str | None:
            log = self.gateway.host_log()
            if mark not in log:
                return None
            tail = log[log.index(mark) :]
            return tail[: tail.index(" retained") + len(" retained")]

        found: str = wait_for(line, f"the end of {session_key}'s run")
        return found


def plugin_config(name: str, state: Path, workspace: Path, ocb: Path) -> dict[str, Any]:
    if name == "defaults":
        return {}
    if name == "every":
        return {
            "brain": "~/brain-b",
            "workspace": str(workspace),
            "ocb": str(ocb),
            "budgetChars": 600,
            "inject": "all",
            "capture": True,
            "learnFromOutcomes": True,
            "failureReward": -1,
            "toolHints": True,
            "extractorCommand": [sys.executable, str(state / "extract.py")],
            "minCaptureChars": 10,
            "timeoutMs": 30000,
            "recallTool": False,
            "retainTool": True,
            "feedbackTool": True,
        }
    return {"ocb": str(ocb), "inject": "off", "capture": False, "learnFromOutcomes": False}


CASES = [(n, m) for n in ("defaults", "every", "off") for m in ("local", "gateway")]


@pytest.fixture(params=CASES, ids=[f"{n}-{m}" for n, m in CASES])
def case(
    request: pytest.FixtureRequest, openclaw_root: Path, llm: FakeLlm, tmp_path: Path
) -> Iterator[Case]:
    name, mode = request.param
    workspace = tmp_path / "workspace"
    shutil.copytree(ROOT / "examples" / "workspace", workspace)
    # the `every` agent works elsewhere: the brain indexes the configured workspace
    agent = tmp_path / "agent" if name == "every" else workspace
    (agent / "notes").mkdir(parents=True, exist_ok=True)
    (agent / "notes" / "hinted.md").write_text("# Hinted\n")
    (tmp_path / "extract.py").write_text(EXTRACTOR)
    ocb = ocb_wrapper(tmp_path)
    config = plugin_config(name, tmp_path, workspace, ocb)
    port = free_port()
    write_config(tmp_path, agent, llm.port, port, config)
    gw = Gateway(openclaw_root, tmp_path, port)
    gw.env["PATH"] = f"{tmp_path}{os.pathsep}{gw.env['PATH']}"  # `ocb` on PATH: the wrapper
    home = Path(gw.env["OPENCLAW_HOME"])
    brain = home / "brain-b" if name == "every" else workspace / ".ocb"
    try:
        if mode == "gateway":
            gw.start()
            wait_for(lambda: hello(brain), "the daemon the plugin's service started")
        yield Case(name, gw, workspace, agent, brain, config, mode == "local")
    finally:
        gw.stop()
        stop_daemon(ocb, brain)
        clean_tmp_openclaw()


def _outcomes(brain: Path, session: str) -> list[dict[str, Any]]:
    traces = {e["trace_id"] for e in events(brain, "query_traced") if e["chat_id"] == session}
    assert traces, f"no trace of {session}"
    return [e for e in events(brain, "outcome_recorded") if e["trace_id"] in traces]


def _first_turn(case: Case, llm: FakeLlm) -> tuple[str, str]:
    """A success: the model searches, reads the rollback runbook and answers (the
    answer and question short, unless the switches are off); the session and code."""
    code = f"E{uuid.uuid4().int % 10**6:06d}"
    reply = f"Deploy failed: error {code}; fixed by rollback."
    asked = f"Roll back? {code}"
    if case.name == "off":
        reply = (
            f"The deploy failed with error {code} because the migration locked the table; "
            "fixed by rolling back."
        )
        asked = f"The nightly deploy failed again with error {code} after the schema change. Why?"
    llm.script = Script(calls=[SEARCH, READ], reply=reply)
    session = key()
    case.turn(session, asked)
    case.ended(session)
    return session, code


def _check_first_turn(case: Case, llm: FakeLlm, session: str, code: str) -> None:
    bodies = turn_requests(llm, code)
    # inject / budgetChars: only `every` injects (a main session), within its budget; the
    # prompt section never says context was recalled, the block does where there is one
    block = user_text(bodies[0])
    system = json.dumps([m for m in bodies[0]["messages"] if m["role"] == "system"])
    assert "## Memory (OpenClawBrain)" in system and "recalled" not in system.lower()
    if case.name == "every":
        text = block[block.index("<ocb-memory>") : block.index("</ocb-memory>") + 13]
        assert len(text) <= 600 and "[runbooks/rollback.md#L" in text, text
        assert "Recalled from memory (OpenClawBrain) for this turn" in text
    else:
        assert "<ocb-memory>" not in block and "Recalled from memory" not in block
    # recallTool / retainTool / feedbackTool
    offered = {t["function"]["name"] for t in bodies[0].get("tools") or []}
    mine = {n for n in offered if n.startswith("memory_")}
    want = {"memory_search", "memory_get"}
    want |= {"memory_retain", "memory_feedback"} if case.name == "every" else {"memory_recall"}
    assert mine == want
    # brain / workspace / ocb: the daemon the plugin started serves the configured brain
    # over the configured workspace
    results = [r for b in bodies for r in tool_results(b)]
    hits = next(r for r in results if "results" in r)
    assert not hits.get("disabled") and hits["results"][0]["path"] == "runbooks/rollback.md"
    read = next(r for r in results if "totalLines" in r)
    first = (case.workspace / "runbooks/rollback.md").read_text().split("\n")[0]
    assert read["from"] == 1 and read["lines"] > 1 and read["text"].split("\n")[0] == first
    assert hello(case.brain)
    if case.name == "every":
        assert not (case.workspace / ".ocb").exists() and not (case.agent / ".ocb").exists()
    # what the plugin asked is recorded as the plugin's
    traced = rpc(case.brain, "events", types=["query_traced"], limit=100_000)
    assert {r["actor"] for r in traced if r["event"]["chat_id"] == session} == {"plugin"}
    # learnFromOutcomes: the search's trace credited with the chunks the read covered
    scored = _outcomes(case.brain, session)
    if case.name == "off":
        assert scored == []
    else:
        assert scored and all(e["reward"] == 1.0 and e["source"] == "self" for e in scored)
        assert all(
            e["used"] and all(u.startswith("runbooks/rollback.md::") for u in e["used"])
            for e in scored
        )
    # capture / minCaptureChars / extractorCommand: a short run is captured only under
    # `every` (minCaptureChars 10), with the extractor's lines, each its speaker's claim
    facts = facts_saying(case.brain, code)
    said = sorted((f["speaker"], f["content"][:16], f["turn"]) for f in facts)
    if case.name == "every":
        # the user's message is the transcript's first, the answer its last (the tools'
        # calls and results between)
        answer = said[0][2]
        assert said == [
            ("assistant", "Deploy failed: e", answer),
            ("assistant", "Extractor noted:", answer),
            ("user", "Extractor noted:", 1),
        ]
        ends = [ln for ln in case.gateway.host_log().splitlines() if "ocb-memory: run of" in ln]
        assert answer > 1 and {f["session"] for f in facts} == {session}, (facts, ends)
    else:
        assert said == []


def _second_turn(case: Case, llm: FakeLlm) -> None:
    """A failure after a search and a directory listing: the failure's outcome
    (failureReward) and the listing's params (toolHints)."""
    rpc(case.brain, "kg", action="set", subject="tool:ls", predicate="path", value="notes")
    llm.script = Script(calls=[SEARCH, LIST], fail=400)
    session, marker = key(), f"roll back again {uuid.uuid4().hex[:8]}"
    case.turn(session, marker, ok=False)
    case.ended(session)
    listing = "\n".join(t for b in turn_requests(llm, marker) for t in tool_texts(b))
    assert ("hinted.md" in listing) is (case.name == "every"), listing[:2000]
    # every trace of the failed run (its search; under `every` its injection too) gets
    # failureReward, without citations
    rewards = {(e["reward"], tuple(e["cited"])) for e in _outcomes(case.brain, session)}
    failed = {"defaults": {(0.0, ())}, "every": {(-1.0, ())}}
    assert rewards == failed.get(case.name, set())


def _writing_tools(case: Case, llm: FakeLlm) -> None:
    """``every`` offers memory_retain and memory_feedback: the model retains a fact (its
    claim, recorded as the plugin's) and scores its search, which the run's end then
    leaves alone."""
    code = f"F{uuid.uuid4().int % 10**6:06d}"
    fact = f"Deploys of service {code} need the VPN to be up."
    retain: Call = ("memory_retain", {"content": fact, "type": "W"})
    feedback: Call = ("memory_feedback", {"reward": -1})
    llm.script = Script(calls=[SEARCH, retain, feedback], reply="Noted.")
    session, marker = key(), f"remember {code}"
    case.turn(session, marker)
    assert " 0 outcome(s)" in case.ended(session)  # the search was scored by the model
    got = {r.get("retained", r.get("recorded")): r for b in turn_requests(llm, marker)
           for r in tool_results(b) if "retained" in r or "recorded" in r}  # fmt: skip
    assert set(got) == {True}, got
    [claim] = [f for f in facts_saying(case.brain, code) if f["content"] == fact]
    assert (claim["speaker"], claim["session"], claim["kind"]) == ("assistant", session, "W")
    scored = _outcomes(case.brain, session)
    assert [(e["reward"], e["source"]) for e in scored] == [(-1.0, "self")], scored
    assert scored[0]["request_id"].startswith("ocb-memory:feedback:")
    recs = rpc(case.brain, "events", types=["facts_recorded", "outcome_recorded"], limit=100_000)
    mine = [
        r
        for r in recs
        if code in json.dumps(r) or r["event"].get("trace_id") == scored[0]["trace_id"]
    ]
    assert mine and {r["actor"] for r in mine} == {"plugin"}


def test_every_key_of_the_config_with_and_without_it(case: Case, llm: FakeLlm) -> None:
    session, code = _first_turn(case, llm)
    _check_first_turn(case, llm, session, code)
    _second_turn(case, llm)
    if case.name == "every":
        _writing_tools(case, llm)
    host = case.gateway.host_log()
    assert 'The "paths[0]" argument' not in host and "handler from ocb-memory failed" not in host


def test_timeout_ms_bounds_a_request_to_a_daemon_that_never_answers(
    openclaw_root: Path, llm: FakeLlm, tmp_path: Path
) -> None:
    """``--local``: a search fails open after ``timeoutMs`` (1500), and after the
    default 5000 ms without the key; the turn goes on."""
    workspace = tmp_path / "workspace"
    shutil.copytree(ROOT / "examples" / "workspace", workspace)
    ocb = ocb_wrapper(tmp_path)
    gw = Gateway(openclaw_root, tmp_path, 0)
    llm.script = Script(calls=[SEARCH], reply="Carry on.")
    try:
        with silent_daemon(workspace / ".ocb"):
            for given, ms in (({"timeoutMs": 1500}, 1500), ({}, 5000)):
                write_config(tmp_path, workspace, llm.port, free_port(), {"ocb": str(ocb), **given})
                marker = f"silent daemon {uuid.uuid4().hex[:8]}"
                gw.turn(key(), marker, local=True)
                got = [r for b in turn_requests(llm, marker) for r in tool_results(b)][0]
                assert got["results"] == [] and got["unavailable"] is True, got
                assert got["error"] == f"ocb daemon did not answer hello in {ms} ms", got
    finally:
        clean_tmp_openclaw()


def test_the_config_schema_lists_exactly_the_documented_table() -> None:
    manifest = json.loads((ROOT / "integrations/openclaw/openclaw.plugin.json").read_text())
    keys = set(manifest["configSchema"]["properties"])
    page = (ROOT / "docs/openclaw.md").read_text()
    table = page[page.index("| config | default | what |") :].split("\n\n")[0]
    rows = {line.split("`")[1] for line in table.split("\n")[2:] if line.startswith("| `")}
    assert rows == keys
    covered = set(plugin_config("every", Path("/s"), Path("/w"), Path("/o")))
    assert covered == keys
