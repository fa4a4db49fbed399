"""The daemon's methods against what they serve: each params struct takes the keywords
of the ``Brain`` method it calls, with the same defaults; each ``ocb`` command says how
the daemon runs it; a query is shaped as the memory tools show it once, here."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest
import typer

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.cli.rpc import CommandLine, marks
from ocb.daemon.client import LOCAL_COMMANDS
from ocb.daemon.live import LiveBrain
from ocb.daemon.methods import CLIENTS, PARAMS, Asked, methods
from ocb.daemon.protocol import PROTOCOL
from ocb.reports import Answer, Hit
from ocb.settings import Actor
from ocb.wire import SNIPPET_CHARS, context_block, search_hit, search_json
from ocb_events.errors import InputError
from ocb_events.schema import FactKind

# method -> (the Brain methods it calls, {param: the Brain keyword it is}); a param
# named nowhere here must be a keyword of one of those methods
CALLS: dict[str, tuple[tuple[Callable[..., Any], ...], dict[str, str]]] = {
    "query": ((Brain.query,), {}),
    "search": ((Brain.query,), {}),
    "context": ((Brain.query,), {}),
    "learn": ((Brain.learn,), {}),
    "inject": ((Brain.inject,), {}),
    "recall": ((Brain.recall,), {}),
    "retain": ((Brain.retain,), {}),
    "reflect": ((Brain.reflect,), {}),
    "kg": ((Brain.kg_get, Brain.kg_set, Brain.kg_history), {}),
    "events": ((Brain.events,), {}),
    "audit": ((Brain.audit_node, Brain.audit_edge), {}),
    "read": ((Brain.read_lines,), {"path": "rel"}),
    "sql": ((Brain.sql,), {}),
    "doctor": ((Brain.doctor_at,), {}),
    "health": ((Brain.health,), {}),
    "maintain": ((Brain.maintain,), {}),
    "config": ((Brain.set_config,), {}),
    "sync": ((Brain.sync,), {}),
}
OWN = {
    "query": {"walk"},  # the answer shaped with its walk
    "search": {"style", "min_score", "walk"},  # how the hits are shaped
    "context": {"budget"},  # the block's size
    "kg": {"action"},  # which of the three it calls
}
"""Params that choose or shape rather than pass a keyword."""
DIFFERENT = {("events", "limit"): (1000, None)}
"""(method, param): (the param's default, the keyword's) where they differ on purpose:
the daemon sends at most 1000 events in one answer."""
OPTIONAL = {("kg", "value"), ("audit", "node"), ("audit", "source"), ("audit", "target"),
            ("config", "key"), ("config", "value")}  # fmt: skip
"""Params a method that calls one of several Brain methods (or reads when it is not
given a value to write) takes as optional where one of them requires it."""


def _keywords(fns: tuple[Callable[..., Any], ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fn in fns:
        for p in inspect.signature(fn).parameters.values():
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                out.setdefault(p.name, p.default)
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return list(a) == list(b)
    return bool(a == b)


@pytest.mark.parametrize("method", sorted(CALLS))
def test_each_params_struct_takes_its_brain_methods_keywords_and_defaults(method: str) -> None:
    fns, renamed = CALLS[method]
    keywords = _keywords(fns)
    for f in msgspec.structs.fields(PARAMS[method]):
        if f.name == "actor" or f.name in OWN.get(method, set()):
            continue
        name = renamed.get(f.name, f.name)
        assert name in keywords, f"{method}: {f.name} is no keyword of {fns}"
        default = keywords[name]
        if default is inspect.Parameter.empty:
            assert f.required or (method, f.name) in OPTIONAL, f"{method}: {f.name} has a default"
            continue
        ours = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
        if (method, f.name) in DIFFERENT:
            assert (ours, default) == DIFFERENT[(method, f.name)]
            continue
        assert _same(ours, default), f"{method}: {f.name} defaults to {ours!r}, not {default!r}"
    asks = issubclass(PARAMS[method], Asked)
    takes_actor = "actor" in keywords and method != "sync"  # sync records as the daemon's
    assert asks == takes_actor, f"{method}: actor is {'' if asks else 'not '}a param"


def test_the_read_param_start_is_from_on_the_wire() -> None:
    got = msgspec.convert({"path": "a.md", "from": 3}, PARAMS["read"])
    assert msgspec.structs.asdict(got) == {"path": "a.md", "start": 3, "lines": None}
    assert inspect.signature(Brain.read_lines).parameters["start"].default == 1


def test_a_client_asks_as_one_of_the_actors_and_no_other() -> None:
    assert set(CLIENTS) <= set(Actor.__args__)  # type: ignore[attr-defined]
    for actor in CLIENTS:
        assert msgspec.convert({"text": "q", "actor": actor}, PARAMS["query"]).actor == actor
    for other in ("watcher", "daemon", "root"):
        with pytest.raises(InputError, match=f"unknown actor '{other}'"):
            msgspec.convert({"text": "q", "actor": other}, PARAMS["query"])


def test_every_method_has_its_params(built: Path) -> None:
    with LiveBrain(built) as live:
        assert set(methods(live)) == set(PARAMS) - {"cli"}


# ------------------------------------------------------------------ the commands' marks

ROOT = typer.main.get_command(app)


def test_every_command_says_how_the_daemon_runs_it() -> None:
    found = dict(marks(ROOT))
    assert "query" in found and "kg get" in found and "serve status" in found
    unmarked = sorted(path for path, mark in found.items() if mark is None)
    assert unmarked == [], f"add @runs(...) to: {', '.join(unmarked)}"


def test_the_client_keeps_local_exactly_the_commands_marked_local() -> None:
    local = {path.split()[0] for path, mark in marks(ROOT) if mark and mark[0] == "local"}
    assert local == set(LOCAL_COMMANDS)


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["query", "--brain", "b", "x"], "write"),
        (["query", "--brain", "b", "x", "--as-of", "3"], "read"),
        (["query", "--brain", "b", "x", "--as-of=3"], "read"),
        (["events", "--brain", "b"], "read"),
        (["doctor", "--brain", "b"], "read"),
        (["kg", "get", "--brain", "b", "s"], "read"),
        (["kg", "history", "--brain", "b", "s"], "read"),
        (["kg", "set", "--brain", "b", "s", "p", "v"], "write"),
        (["audit", "edge", "--brain", "b", "--source", "a", "--target", "c"], "history"),
        (["sql", "--brain", "b", "select 1"], "history"),
        (["sql", "--help"], "read"),
        (["report", "--brain", "b"], "history"),
        (["forget", "--brain", "b", "--help"], "exclusive"),
        (["replay", "--brain", "b"], "exclusive"),
        (["reembed", "--brain", "b"], "exclusive"),
        (["maintain", "--brain", "b", "--dry-run"], "read"),
        (["maintain", "--brain", "b"], "write"),
        (["retract", "--brain", "b", "--dry-run"], "read"),
        (["warm", "--brain", "b", "--dry-run"], "read"),
        (["teach", "--brain", "b", "--dry-run"], "write"),
        (["learn", "--help"], "read"),
        (["serve", "status", "--brain", "b"], "local"),
        (["mcp", "--brain", "b"], "local"),
        (["--brain", "b", "query", "x"], "write"),
        (["no-such-command"], "write"),
    ],
)
def test_a_command_runs_as_its_mark_says(argv: list[str], kind: str) -> None:
    assert CommandLine(ROOT).kind(argv) == kind


# ------------------------------------------------------------------ search hits and context


def _hit(i: int, text: str, *, fired: bool = True, claim: bool = False, score: float = 0.5) -> Hit:
    return Hit(id=f"n{i}", source=f"a.md#L{i}-L{i + 1}", text=text, score=score, fired=fired,
               kind="chunk", claim=claim)  # fmt: skip


def _answer(*hits: Hit) -> Answer:
    return Answer(trace_id="t1", query="q", results=list(hits), fired=[h.id for h in hits],
                  stop_reason="budget", context_chars=0, context="")  # fmt: skip


def test_a_hit_is_shaped_once_for_each_tool() -> None:
    long = "x" * 900
    mcp = search_hit(_hit(3, long, score=0.912345))
    assert mcp == {"path": "a.md", "startLine": 3, "endLine": 4, "score": 0.912345,
                   "snippet": "x" * (SNIPPET_CHARS - 1) + "…", "citation": "a.md#L3-L4",
                   "id": "n3", "kind": "chunk"}  # fmt: skip
    one = Hit(id="n", source="b.md#L5-L5", text="short  ", score=0.12345, fired=False,
              kind="chunk", claim=True)  # fmt: skip
    assert search_hit(one, "openclaw") == {
        "path": "b.md", "startLine": 5, "endLine": 5, "score": 0.1235,
        "snippet": "short\n\nSource: b.md#L5", "source": "memory", "citation": "b.md#L5",
        "claim": True,
    }  # fmt: skip
    injected = Hit(id="correction::1", source="correction::1", text="t", score=1.0, fired=True,
                   kind="correction")  # fmt: skip
    assert search_hit(injected)["path"] == "correction::1"
    assert search_hit(injected)["startLine"] == 0


def test_search_drops_hits_under_the_least_score_and_names_what_fired() -> None:
    got = search_json(_answer(_hit(1, "a", score=0.9), _hit(2, "b", score=0.1, fired=False)),
                      "openclaw", 0.2)  # fmt: skip
    assert [h["path"] for h in got["results"]] == ["a.md"]
    assert got["fired"] == ["a.md#L1-L2"] and got["trace_id"] == "t1"


def test_the_context_block_holds_what_fired_within_its_budget() -> None:
    answer = _answer(_hit(1, "first " * 40), _hit(2, "skip", fired=False),
                     _hit(3, "The fix was to restart", claim=True))  # fmt: skip
    text, used = context_block(answer, 2000)
    assert text.startswith("<ocb-memory>\n") and text.endswith("\n</ocb-memory>")
    assert "[a.md#L3-L4] (an agent's claim, unconfirmed)\nThe fix was" in text
    assert [h.id for h in used] == ["n1", "n3"] and "skip" not in text
    for budget in (300, 400, 700):
        cut, _ = context_block(answer, budget)
        assert len(cut) <= budget
    assert context_block(answer, 100) == ("", [])


# ------------------------------------------------------------------ the plugin's side

PLUGIN = Path(__file__).resolve().parents[3] / "integrations" / "openclaw" / "src"


def test_the_plugin_speaks_this_protocol_and_these_fact_kinds() -> None:
    """What the plugin must name itself (a client says which protocol it speaks, and
    its tool's schema lists the kinds) is this side's, so a change here fails here."""
    daemon = (PLUGIN / "daemon.ts").read_text(encoding="utf-8")
    assert re.search(rf"^export const PROTOCOL = {PROTOCOL};$", daemon, re.M)
    tools = (PLUGIN / "tools.ts").read_text(encoding="utf-8")
    kinds = re.search(r"^const KINDS = \[(.*)\];$", tools, re.M)
    assert kinds is not None
    assert tuple(json.loads(f"[{kinds[1]}]")) == get_args(FactKind)
    assert "-32001" not in tools  # a refused request is told by its kind, not a code
