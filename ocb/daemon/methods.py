"""The daemon's methods: the ``Brain`` facade one to one over JSON-RPC, each answering
with the object its command prints under ``--json`` (``ocb.wire``); ``search`` and
``context``, a query shaped as the memory tools show it; and ``cli``, which runs any
``ocb`` command for the thin client and returns its output and exit code.

Params are named and checked (an unknown or mistyped one is an INVALID_PARAMS error).
Each params struct mirrors the keywords and defaults of the ``Brain`` method it calls
(a test holds them to it).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import msgspec

from ocb.daemon.client import brain_of
from ocb.daemon.live import LiveBrain
from ocb.daemon.protocol import CONFLICT, PROTOCOL, RpcError
from ocb.daemon.served import SERVED
from ocb.daemon.server import Method
from ocb.daemon.streams import capture, install
from ocb.settings import Actor
from ocb.wire import (
    answer_json,
    context_json,
    doctor_json,
    edge_json,
    get_json,
    health_json,
    history_json,
    inject_json,
    learn_json,
    maintenance_json,
    node_json,
    recall_json,
    reflect_json,
    result_json,
    retain_json,
    search_json,
    set_json,
    settings_json,
    sync_json,
)
from ocb_events.codec import record_to_json
from ocb_events.errors import InputError

__all__ = [
    "CLIENTS",
    "PARAMS",
    "App",
    "Asked",
    "Kind",
    "Params",
    "methods",
    "own_brain",
]

P = TypeVar("P", bound=msgspec.Struct)

Kind = Literal["read", "write", "history", "exclusive", "local"]
"""How the daemon runs a command: beside the writer (``read``), on the writer thread
(``write``), alone (``exclusive``), outside the gate over the history (``history``), or
never (``local``: it runs only in its own process)."""


class Params(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The params of a method that records nothing."""


CLIENTS: tuple[Actor, ...] = ("cli", "mcp", "plugin", "ui")
"""The actors a client may ask as: the ``actor`` of what a method records."""


class Asked(Params, kw_only=True):
    """The params of a method that records: who asks (refused in one line when it is
    none of ``CLIENTS``)."""

    actor: str = "cli"

    def __post_init__(self) -> None:
        if self.actor not in CLIENTS:
            raise InputError(f"unknown actor {self.actor!r}", f"use one of: {', '.join(CLIENTS)}")


class Query(Asked):
    text: str
    top: int = 5
    chat_id: str = ""
    mode: str | None = None
    record: bool = True
    walk: bool = False
    """Also answer how the query walked (``ocb.wire.walk_json``)."""


class Search(Query):
    """A query shaped as a memory tool's hits (``ocb.wire.search``)."""

    style: Literal["mcp", "openclaw"] = "mcp"
    min_score: float | None = None


class Context(Asked):
    """A query as the cited context block put before a prompt."""

    text: str
    top: int = 5
    chat_id: str = ""
    budget: int = 2000


class Learn(Asked):
    outcome: float
    trace_id: str = ""
    chat_id: str = ""
    fired_ids: list[str] = []
    rule: str | None = None
    source: str = "human"
    request_id: str = ""
    again: bool = False
    used: list[str] = []
    cited: list[str] = []


class Inject(Asked):
    node_type: str
    content: str
    chat_id: str = ""
    trace_id: str = ""
    targets: list[str] = []
    all_fired: bool = False


class Recall(Asked):
    query: str = ""
    k: int = 10
    since: str | None = None
    kinds: list[str] | None = None
    entities: list[str] | None = None
    min_salience: float = 0.0
    depth: int = 0
    max_chars: int | None = None
    record: bool = True


class Retain(Asked):
    content: str
    kind: str = "W"
    entities: list[str] | None = None
    salience: float | None = None
    confidence: float | None = None
    speaker: str = "user"
    session: str = ""
    turn: int = 0


class Reflect(Asked):
    since: str = "7d"


class Kg(Asked):
    subject: str
    action: Literal["get", "set", "history", "subjects"] = "get"
    predicate: str | None = None
    value: str | None = None
    source: str = ""


class Events(Params):
    since: int = 0
    types: list[str] = []
    limit: int = 1000


class Audit(Params):
    node: str = ""
    source: str = ""
    target: str = ""
    limit: int = 20


class Read(Params):
    path: str
    start: int = msgspec.field(name="from", default=1)
    lines: int | None = None


class Sql(Params):
    statement: str
    params: list[Any] | None = None


class Health(Asked):
    window: int = 100
    apply: bool = False


class Maintain(Asked):
    ops: list[str] = []
    dry_run: bool = False
    top: int = 10


class Config(Asked):
    key: str | None = None
    value: str | None = None


class Sync(Params):
    workspace: str


class Cli(Params):
    argv: list[str]
    protocol: int


PARAMS: dict[str, type[Params]] = {
    "query": Query, "search": Search, "context": Context, "learn": Learn,
    "inject": Inject, "recall": Recall, "retain": Retain, "reflect": Reflect, "kg": Kg,
    "events": Events, "audit": Audit, "read": Read, "sql": Sql, "doctor": Params,
    "health": Health, "maintain": Maintain, "config": Config, "sync": Sync, "cli": Cli,
}  # fmt: skip
"""The params of every method but the server's own."""


class App(Protocol):
    """The ``ocb`` command line as the daemon runs it for a thin client."""

    def kind(self, argv: list[str]) -> Kind:
        """How the daemon runs ``ocb <argv>`` (each command says so itself)."""
        ...

    def main(self, argv: list[str]) -> None:
        """Run ``ocb <argv>`` (its exit code raised as ``SystemExit``)."""
        ...


def _p(kind: type[P], params: dict[str, Any]) -> P:
    return msgspec.convert(params, kind)


SPAWNING_OPTIONS = frozenset({"--extractor"})
"""Options that name a program for the command to start: the daemon runs none of
them for a client (the program would run as the daemon, in its environment)."""


def own_brain(brain: Path, argv: list[str], kind: Kind) -> None:
    """Refuse ``ocb <argv>`` (of ``kind``) unless it is a command the daemon of
    ``brain`` may run for a client: one on this brain (``--brain`` naming it), never one
    that runs only in its own process (``serve``, ``mcp`` ...) nor one that names a
    program to start (``SPAWNING_OPTIONS``).

    Raises:
        InputError: naming what to run instead.
    """
    words = [a for a in argv if not a.startswith("-")]
    name = words[0] if words else ""
    spawning = [a.split("=", 1)[0] for a in argv if a.split("=", 1)[0] in SPAWNING_OPTIONS]
    if spawning:
        raise InputError(
            f"the daemon does not start a program a client names ({spawning[0]})",
            f"run it on its own: ocb --no-daemon {name} ... (to stop this daemon: "
            f"ocb serve stop --brain {brain})",
        )
    if kind == "local":
        raise InputError(
            f"ocb {name} does not run inside a daemon",
            f"run it on its own: ocb --no-daemon {name} ... (to stop this daemon: "
            f"ocb serve stop --brain {brain})",
        )
    given, _ = brain_of(argv, {})
    if given is None:
        raise InputError(
            "a command sent to the daemon must name its brain",
            f"add --brain {brain}",
        )
    if os.path.realpath(given) != os.path.realpath(brain):
        raise InputError(
            f"this daemon serves {brain}, not {given}",
            f"send it to the daemon of {given}, or run it with --no-daemon",
        )


def _run_cli(brain: LiveBrain, app: App, argv: list[str]) -> dict[str, Any]:
    token = SERVED.set(brain)
    code = 0
    with capture() as cap:
        try:
            app.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                cap.err.write(exc.code + "\n")
        except Exception:
            cap.err.write(traceback.format_exc())
            code = 1
        finally:
            SERVED.reset(token)
    return {"stdout": cap.out.getvalue(), "stderr": cap.err.getvalue(), "exit": code}


def _cli(brain: LiveBrain, app: App) -> Method:
    def kind(params: dict[str, Any]) -> str:
        argv = params.get("argv")
        if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
            got = app.kind(argv)
            return "read" if got == "local" else got  # local: refused by run
        return "read"  # bad params: refused by run

    def run(params: dict[str, Any]) -> dict[str, Any]:
        p = _p(Cli, params)
        if p.protocol != PROTOCOL:
            raise RpcError(
                CONFLICT,
                f"this daemon speaks protocol {PROTOCOL}, the client {p.protocol}",
                "restart the daemon with this ocb: ocb serve stop, then ocb serve",
            )
        own_brain(brain.path, p.argv, app.kind(p.argv))
        return _run_cli(brain, app, p.argv)

    return Method(kind, run)


def _kg(b: LiveBrain, p: Kg) -> Any:
    if p.action == "set":
        if p.predicate is None or p.value is None:
            raise TypeError("kg set needs predicate and value")
        return set_json(b.kg_set(p.subject, p.predicate, p.value, p.source, actor=p.actor))
    if p.action == "history":
        return history_json(b.kg_history(p.subject, p.predicate))
    if p.action == "subjects":
        return {"subjects": b.kg_subjects()}
    return get_json(b.kg_get(p.subject, p.predicate))


def _audit(b: LiveBrain, p: Audit) -> Any:
    if p.node:
        return node_json(b.audit_node(p.node, limit=p.limit))
    return edge_json(b.audit_edge(p.source, p.target))


def _config(b: LiveBrain, p: Config) -> Any:
    if p.key is not None and p.value is not None:
        b.set_config(p.key, p.value, actor=p.actor)
    return settings_json(b.state("config").values, p.key)


def _read(b: LiveBrain, p: Read) -> dict[str, Any]:
    got = b.read_lines(p.path, p.start, p.lines)
    return {"path": got.path, "from": got.start_line, "to": got.end_line,
            "total_lines": got.total_lines, "text": got.text}  # fmt: skip


def _events(b: LiveBrain, p: Events) -> list[Any]:
    recs = b.events(since=p.since, types=p.types, limit=p.limit)
    return [msgspec.json.decode(record_to_json(r)) for r in recs]


def _query(b: LiveBrain, p: Query | Context) -> Any:
    record = p.record if isinstance(p, Query) else True
    mode = p.mode if isinstance(p, Query) else None
    return b.query(p.text, top=p.top, chat_id=p.chat_id, mode=mode, record=record,
                   actor=p.actor)  # fmt: skip


def methods(brain: LiveBrain, app: App | None = None) -> dict[str, Method]:
    """Every method of the protocol but the server's own, over ``brain``; ``app`` is
    the ``ocb`` command line that ``cli`` runs (None: no ``cli``, and the standard
    streams are left as they are, for a caller that serves on them, such as ``ocb
    mcp``)."""
    b = brain

    def m(kind: str | Callable[[dict[str, Any]], str], ptype: type[P],
          fn: Callable[[P], Any]) -> Method:  # fmt: skip
        return Method(kind, lambda params: fn(_p(ptype, params)))

    def when(
        flag: str, yes: str, no: str, default: bool = False
    ) -> Callable[[dict[str, Any]], str]:
        return lambda params: yes if params.get(flag, default) else no

    recorded = when("record", "write", "read", True)
    table = {
        "query": m(recorded, Query, lambda p: answer_json(_query(b, p), walk=p.walk)),
        "search": m(recorded, Search, lambda p: search_json(_query(b, p), p.style, p.min_score)),
        "context": m("write", Context, lambda p: context_json(_query(b, p), p.budget)),
        "learn": m("write", Learn, lambda p: learn_json(b.learn(
            p.outcome, trace_id=p.trace_id, chat_id=p.chat_id, fired_ids=p.fired_ids,
            rule=p.rule, source=p.source, request_id=p.request_id, again=p.again,
            used=p.used, cited=p.cited, actor=p.actor))),
        "inject": m("write", Inject, lambda p: inject_json(b.inject(
            p.node_type, p.content, chat_id=p.chat_id, trace_id=p.trace_id,
            targets=p.targets, all_fired=p.all_fired, actor=p.actor))),
        "recall": m(recorded, Recall, lambda p: recall_json(b.recall(
            p.query, k=p.k, since=p.since, kinds=p.kinds, entities=p.entities,
            min_salience=p.min_salience, depth=p.depth, max_chars=p.max_chars,
            record=p.record, actor=p.actor))),
        "retain": m("write", Retain, lambda p: retain_json(b.retain(
            p.content, kind=p.kind, entities=p.entities, salience=p.salience,
            confidence=p.confidence, speaker=p.speaker, session=p.session, turn=p.turn,
            actor=p.actor))),
        "reflect": m("write", Reflect, lambda p: reflect_json(b.reflect(p.since, actor=p.actor))),
        "kg": m(lambda q: "write" if q.get("action") == "set" else "read", Kg,
                lambda p: _kg(b, p)),
        "events": m("read", Events, lambda p: _events(b, p)),
        "audit": m("history", Audit, lambda p: _audit(b, p)),
        "read": m("read", Read, lambda p: _read(b, p)),
        "sql": m("history", Sql, lambda p: result_json(b.sql(p.statement, p.params))),
        "doctor": m("read", Params, lambda p: doctor_json(b.doctor_at(b.path))),
        "health": m(when("apply", "write", "read"), Health, lambda p: health_json(
            b.health(window=p.window, apply=p.apply, actor=p.actor))),
        "maintain": m(when("dry_run", "read", "write"), Maintain, lambda p: maintenance_json(
            b.maintain(p.ops, dry_run=p.dry_run, top=p.top, actor=p.actor))),
        "config": m(lambda q: "write" if q.get("value") is not None else "read", Config,
                    lambda p: _config(b, p)),
        "sync": m("write", Sync, lambda p: sync_json(b.sync(Path(p.workspace)))),
    }  # fmt: skip
    if app is not None:
        install()
        table["cli"] = _cli(brain, app)
    return table
