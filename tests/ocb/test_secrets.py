"""Secrets never reach the brain directory: a token pasted into a note, a retained fact,
an injected node, a kg value or a query is recorded redacted (checked on the raw bytes
of the log segments, blobs, snapshots and caches), the file on disk stays as it is, and
a warning names where it was without repeating it."""

from __future__ import annotations

import datetime as dt
import inspect
import json
from pathlib import Path

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.engine.dates import day_start
from ocb.memory.reflect import reflect
from ocb.redaction import FIELDS, holds_secret, rewrite, screened, strings
from ocb_events import parts, schema
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import ConfigChanged, Event, FoldRecord, OutcomeRecorded, Record
from tests import strategies
from tests.ocb.memory.support import BASE, make_ws
from workspace_sync import split_lines
from workspace_sync.secrets import Redacted, Scanner

TOKEN = "ghp_" + "x9Kq2LmZ7vB4nR8tW1yC6pD3sF5gH0jA2eUo"
KEY_LINE = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw"
NOW = day_start(dt.date(2026, 11, 22)) + 9 * 3600 * 10**9

NOTES = {
    "notes/deploy.md": f"""# Deploy

The CI bot pushes with {TOKEN} since Monday.

## Service key

```
-----BEGIN PRIVATE KEY-----
{KEY_LINE}
{KEY_LINE}
-----END PRIVATE KEY-----
```

Rotate it every quarter.
""",
    "memory/2026-11-21.md": f"""# 2026-11-21

## Retain
- W @CI: the bot pushes with {TOKEN}
- W @CI: deploys run at 10:00
""",
    "notes/rotate.md": f"# Rotate {TOKEN}\n\nAsk Priya first.\n",
}


def brain_bytes(path: Path) -> bytes:
    """Every byte under the brain directory: log segments, blobs, snapshots, caches."""
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


def leaks(path: Path) -> list[bytes]:
    data = brain_bytes(path)
    return [s for s in (TOKEN.encode(), KEY_LINE.encode(), TOKEN[4:16].encode()) if s in data]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def open_brain(path: Path, warnings: list[str]) -> Brain:
    return Brain.create(path, clock=TickClock(start_ns=NOW, step_ns=1_000), warn=warnings.append)


def test_a_sync_records_no_byte_of_a_pasted_secret(tmp_path: Path, ws: Path) -> None:
    warnings: list[str] = []
    with open_brain(tmp_path / "b", warnings) as b:
        report = b.sync(ws)
        deploy = split_lines((ws / "notes/deploy.md").read_text())
        for n in b.graph.nodes.values():
            lines = split_lines((ws / n.path).read_text())
            got = split_lines(n.text)
            assert len(got) == n.end_line - n.start_line + 1
            for have, want in zip(got, lines[n.start_line - 1 : n.end_line], strict=True):
                assert have == want or "[REDACTED:" in have
        rotate = b.graph.nodes["notes/rotate.md::0"]
        assert rotate.heading == "Rotate [REDACTED:github-token]"
        assert rotate.text == "# Rotate [REDACTED:github-token]\n\nAsk Priya first."
        facts = b.state("memory").facts
        assert sorted(f.content for f in facts.values()) == [
            "deploys run at 10:00",
            "the bot pushes with [REDACTED:github-token]",
        ]
        b.query(f"who pushes with {TOKEN}")
        assert b.sync(ws).events == 0
    assert [(p, (ws / p).read_text()) for p in NOTES] == list(NOTES.items())
    assert deploy[8] == KEY_LINE and leaks(tmp_path / "b") == []
    assert report.secrets == [
        ("memory/2026-11-21.md", 4, 4, "github-token"),
        ("notes/deploy.md", 3, 3, "github-token"),
        ("notes/deploy.md", 8, 11, "private-key"),
        ("notes/rotate.md", 1, 1, "github-token"),
    ]
    assert warnings == [
        "memory/2026-11-21.md:4: github-token redacted before recording (the file is unchanged)",
        "notes/deploy.md:3: github-token redacted before recording (the file is unchanged)",
        "notes/deploy.md:8-11: private-key redacted before recording (the file is unchanged)",
        "notes/rotate.md:1: github-token redacted before recording (the file is unchanged)",
        "query: github-token redacted before recording",
    ]


def test_a_sync_scans_only_the_files_it_may_record(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files the brain already holds as they are record nothing: they are not scanned
    again (a sync of an unchanged workspace runs no pattern at all)."""
    scanned: list[str] = []
    real = Scanner.redact

    def counted(self: Scanner, text: str) -> Redacted:
        scanned.append(text)
        return real(self, text)

    monkeypatch.setattr(Scanner, "redact", counted)
    with open_brain(tmp_path / "b", []) as b:
        b.sync(ws)
        assert len(scanned) == len(NOTES)
        scanned.clear()
        assert b.sync(ws).events == 0
        assert scanned == []
        (ws / "notes/deploy.md").write_text("# Deploy\n\nRun it at 11:00.\n", encoding="utf-8")
        b.sync(ws)
        assert scanned == ["# Deploy\n\nRun it at 11:00.\n"]


def test_turned_off_the_text_is_recorded_as_it_is(tmp_path: Path, ws: Path) -> None:
    warnings: list[str] = []
    with open_brain(tmp_path / "b", warnings) as b:
        b.set_config("secrets.enabled", "false")
        b.sync(ws)
    data = brain_bytes(tmp_path / "b")
    assert warnings == [] and TOKEN.encode() in data and KEY_LINE.encode() in data


def test_an_edit_resyncs_like_a_fresh_brain_and_keeps_citing_the_right_lines(
    tmp_path: Path, ws: Path
) -> None:
    with open_brain(tmp_path / "b", []) as b:
        b.sync(ws)
        path = ws / "notes/deploy.md"
        path.write_text("# Preface\n\nRead me.\n\n" + path.read_text() + f"\nalso {TOKEN}\n")
        b.sync(ws)
        view = sorted((n.path, n.start_line, n.end_line, n.text) for n in b.graph.nodes.values())
    with open_brain(tmp_path / "fresh", []) as fresh:
        fresh.sync(ws)
        assert view == sorted(
            (n.path, n.start_line, n.end_line, n.text) for n in fresh.graph.nodes.values()
        )
    assert leaks(tmp_path / "b") == [] and leaks(tmp_path / "fresh") == []


def test_retain_writes_and_records_the_fact_redacted(tmp_path: Path, ws: Path) -> None:
    warnings: list[str] = []
    with open_brain(tmp_path / "b", warnings) as b:
        b.sync(ws)
        warnings.clear()
        report = b.retain(f"the staging deploy token is {TOKEN}", entities=["CI"])
        again = b.retain(f"the staging deploy token is {TOKEN}", entities=["CI"])
    assert report.bullet == "- W @CI: the staging deploy token is [REDACTED:github-token]"
    assert (
        ws / "memory/2026-11-22.md"
    ).read_text() == f"# 2026-11-22\n\n## Retain\n{report.bullet}\n"
    assert not again.created and again.fact_id == report.fact_id
    assert warnings == [
        "memory/2026-11-22.md:4: github-token redacted from the retained fact before writing "
        "and recording",
        "memory/2026-11-22.md:4: github-token redacted from the retained fact (already recorded "
        "there)",
    ]
    assert leaks(tmp_path / "b") == []


def test_inject_kg_set_and_recall_record_their_text_redacted(tmp_path: Path, ws: Path) -> None:
    warnings: list[str] = []
    with open_brain(tmp_path / "b", warnings) as b:
        b.sync(ws)
        warnings.clear()
        b.query(f"deploy with {TOKEN}", chat_id="c1")
        node = b.inject("CORRECTION", f"never paste {TOKEN} into notes", chat_id="c1").node_id
        assert b.graph.nodes[node].text == "never paste [REDACTED:github-token] into notes"
        kg = b.kg_set("CI bot", "token", TOKEN, source=f"pasted {TOKEN}")
        assert (kg.value, kg.source) == (
            "[REDACTED:github-token]",
            "pasted [REDACTED:github-token]",
        )
        b.recall(f"bot token {TOKEN}")
    assert warnings == [
        "query: github-token redacted before recording",
        "injected content: github-token redacted before recording",
        "kg set value: github-token redacted before recording",
        "kg set source: github-token redacted before recording",
        "recall query: github-token redacted before recording",
    ]
    assert leaks(tmp_path / "b") == []


def test_the_allow_list_and_extra_patterns_come_from_recorded_settings(
    tmp_path: Path, ws: Path
) -> None:
    (ws / "notes/example.md").write_text(
        "# Example\n\nThe docs use AKIAIOSFODNN7EXAMPLE.\n\nOur vendor key: ACME-0123456789AB\n"
    )
    warnings: list[str] = []
    with open_brain(tmp_path / "b", warnings) as b:
        b.set_config("secrets.allow", "AKIAIOSFODNN7EXAMPLE re:ghp_x9Kq.*")
        b.set_config("secrets.patterns", "acme-key=ACME-[0-9A-F]{12}")
        b.sync(ws)
    data = brain_bytes(tmp_path / "b")
    assert b"AKIAIOSFODNN7EXAMPLE" in data and TOKEN.encode() in data
    assert b"ACME-0123456789AB" not in data and KEY_LINE.encode() not in data
    assert "notes/example.md:5: acme-key redacted before recording (the file is unchanged)" in (
        warnings
    )


def test_bad_secret_settings_are_refused_and_nothing_is_recorded(tmp_path: Path) -> None:
    with Brain.create(tmp_path / "b") as b:
        for key, value in [
            ("secrets.patterns", "acme=ACME-["),
            ("secrets.allow", "re:("),
            ("secrets.enabled", "maybe"),
            ("secrets.entropy_min", "7"),
        ]:
            with pytest.raises(InputError) as exc:
                b.set_config(key, value)
            assert exc.value.hint
        assert b.log.last_seq == 0


def test_init_json_lists_the_secrets_and_warns_on_stderr(tmp_path: Path, ws: Path) -> None:
    res = CliRunner().invoke(
        app, ["init", "--workspace", str(ws), "--brain", str(tmp_path / "b"), "--json"]
    )
    assert res.exit_code == 0
    assert json.loads(res.stdout)["secrets"][:2] == [
        {"path": "memory/2026-11-21.md", "line": 4, "end_line": 4, "kind": "github-token"},
        {"path": "notes/deploy.md", "line": 3, "end_line": 3, "kind": "github-token"},
    ]
    assert "warning: notes/deploy.md:8-11: private-key redacted" in res.stderr
    assert TOKEN[4:12] not in res.stderr + res.stdout
    res = CliRunner().invoke(app, ["config", "--brain", str(tmp_path / "b"), "secrets.enabled"])
    assert res.exit_code == 0
    assert res.stdout.splitlines()[0] == "secrets.enabled = true"


def test_reflect_records_the_old_summary_redacted(tmp_path: Path) -> None:
    page = f"# Peter\n\n## Summary\n- S @Peter: deploys with {TOKEN}\n\n## Notes\nfree text\n"
    ws = make_ws(tmp_path, BASE[:2], pages={"bank/entities/Peter.md": page})
    warnings: list[str] = []
    with Brain.create(tmp_path / "b", clock=TickClock(start_ns=NOW), warn=warnings.append) as b:
        b.sync(ws)
        warnings.clear()
        [change] = [c for c in reflect(b.store, "7d").changes if c.change == "entity_summary"]
        assert TOKEN in change.before  # what the page held, shown to the user only
    assert warnings == ["reflect bank/entities/Peter.md: github-token redacted before recording"]
    assert leaks(tmp_path / "b") == []


# ----------------------------------------------------------------- every field of every event

AWS = "AKIA" + "Q3VZ7XKD2NR5TW8Y"
SLACK = "xoxb-" + "2837461950-Kd83nVb2LqZ7wX1p"
OPENAI = "sk-proj-" + "7Hq2Zx9LmW4vB8nR1tY6cK3p"
KINDS = {
    "aws-access-key-id": AWS,
    "slack-token": SLACK,
    "github-token": TOKEN,
    "openai-key": OPENAI,
}
"""One secret of each kind a name can hold, by the kind the scanner names."""


def _string_like(t: mi.Type) -> bool:
    if isinstance(t, mi.StrType):
        return True
    if isinstance(t, mi.LiteralType):
        return any(isinstance(v, str) for v in t.values)
    if isinstance(t, mi.UnionType):
        return any(_string_like(x) for x in t.types)
    if isinstance(t, (mi.VarTupleType, mi.ListType, mi.SetType, mi.FrozenSetType)):
        return _string_like(t.item_type)
    if isinstance(t, mi.TupleType):
        return any(_string_like(x) for x in t.item_types)
    return False


def _children(t: mi.Type) -> list[mi.Type]:
    if isinstance(t, mi.StructType):
        return [f.type for f in t.fields]
    if isinstance(t, mi.UnionType):
        return list(t.types)
    if isinstance(t, (mi.VarTupleType, mi.ListType, mi.SetType, mi.FrozenSetType)):
        return [t.item_type]
    if isinstance(t, mi.TupleType):
        return list(t.item_types)
    return []


def schema_structs() -> dict[type, mi.StructType]:
    """Every struct the log can hold (walked from ``Record`` and ``FoldRecord``) and
    every struct the schema modules define."""
    found: dict[type, mi.StructType] = {}
    todo: list[mi.Type] = [mi.type_info(Record), mi.type_info(FoldRecord)]
    for module in (schema, parts):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, msgspec.Struct) and cls.__module__ == module.__name__:
                todo.append(mi.type_info(cls))
    while todo:
        t = todo.pop()
        if isinstance(t, mi.StructType):
            if t.cls in found:
                continue
            found[t.cls] = t
        todo.extend(_children(t))
    return found


def test_every_string_field_of_every_event_has_a_role() -> None:
    """A new string field (or tuple of strings, or union holding one), in an event or in
    a part nested in one, fails here until ``ocb.redaction.FIELDS`` says whether it is
    text that can carry a secret or a field the brain generates."""
    roles = {"text", "path", "node", "key", "machine"}
    structs = schema_structs()
    assert len(structs) > 40
    for cls, t in sorted(structs.items(), key=lambda kv: kv[0].__name__):
        strs = {f.name for f in t.fields if _string_like(f.type)}
        have = FIELDS.get(cls, {})
        missing, extra = sorted(strs - set(have)), sorted(set(have) - strs)
        assert not missing, f"{cls.__name__}: classify {missing} in ocb.redaction.FIELDS"
        assert not extra, f"{cls.__name__}: {extra} are not string fields"
        assert set(have.values()) <= roles, cls
    assert set(FIELDS) <= set(structs), "FIELDS names a struct the schema does not hold"


def _count(ev: Event) -> int:
    n = [0]

    def count(value: str, role: str, where: str) -> str:
        n[0] += 1
        return value

    rewrite(ev, count)
    return n[0]


def _plant(ev: Event, k: int, secret: str) -> tuple[Event, str]:
    """``ev`` with ``secret`` added to its k-th string that is not a machine field, and
    where that string is."""
    at: list[str] = []
    i = [0]

    def plant(value: str, role: str, where: str) -> str:
        i[0] += 1
        if i[0] - 1 != k:
            return value
        at.append(where)
        return f"{value} {secret}" if role == "text" else f"{value}/{secret}"

    new, _ = rewrite(ev, plant)
    return new, at[0]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(ev=strategies.events(), data=st.data(), kind=st.sampled_from(sorted(KINDS)))
def test_the_net_redacts_a_secret_in_any_field_and_leaves_the_rest(
    ev: Event, data: st.DataObject, kind: str
) -> None:
    """Whatever string field of whatever event holds a secret, ``Store.record``'s net
    records it redacted and warns naming the field (never the secret); an event with
    no secret passes as it is."""
    scanner = Scanner()
    texts: set[str] = set()
    names: set[str] = set()
    strings(ev, texts, names)
    assume(not holds_secret(scanner, texts, names))  # random strings: rarely, a secret
    assume(not (isinstance(ev, ConfigChanged) and ev.key.startswith("secrets.")))
    warned: list[str] = []
    assert screened([ev], scanner, warned.append)[0] is ev and warned == []
    n = _count(ev)
    assume(n > 0)
    planted, where = _plant(ev, data.draw(st.integers(0, n - 1)), KINDS[kind])
    [got] = screened([planted], scanner, warned.append)
    assert KINDS[kind].encode() not in msgspec.json.encode(got)
    assert warned == [f"{where}: {kind} redacted before recording"]
    assert screened([got], scanner, warned.append)[0] is got, "redacting twice changes nothing"


def test_what_no_command_scanned_is_redacted_when_it_is_recorded(tmp_path: Path) -> None:
    warnings: list[str] = []
    with Brain.create(tmp_path / "b", warn=warnings.append) as b:
        ev = OutcomeRecorded(reward=1.0, source="human", request_id=f"retry-{TOKEN}")
        [rec] = b.store.record([ev], "human", expected_seq=0)
        assert isinstance(rec.event, OutcomeRecorded)
        assert rec.event.request_id.startswith("retry-[REDACTED:github-token:")
        b.set_config("secrets.allow", AWS)  # the allow-list is recorded as it is given
    assert warnings == ["outcome_recorded.request_id: github-token redacted before recording"]
    data = brain_bytes(tmp_path / "b")
    assert TOKEN.encode() not in data and AWS.encode() in data


def test_keys_are_recorded_redacted_and_a_lookup_by_the_same_value_finds_them(
    tmp_path: Path, ws: Path
) -> None:
    """A chat id or a request id holding a secret is recorded as its keyed marker, the
    same every time: a retried request still counts once, two secrets stay two keys,
    and a later lookup by the same value finds the chat. A retract reason is text."""
    warnings: list[str] = []
    chat, other = f"chat-{SLACK}", f"chat-{OPENAI}"
    with open_brain(tmp_path / "b", warnings) as b:
        b.sync(ws)
        warnings.clear()
        a = b.query("when do deploys run", chat_id=chat)
        assert a.chat_id.startswith("chat-[REDACTED:slack-token:")
        first = b.learn(1.0, chat_id=chat, request_id=f"req-{TOKEN}")
        again = b.learn(1.0, chat_id=chat, request_id=f"req-{TOKEN}")
        assert first.recorded and not again.recorded and again.outcome_seq == first.outcome_seq
        b.query("who pushes the bot", chat_id=other)
        assert b.learn(-1.0, chat_id=other, request_id=f"req-{AWS}").recorded, "another key"
        assert b.trace(chat_id=chat).trace_id == a.trace_id
        b.inject("TEACHING", "deploys run at ten", chat_id=chat)
        back = b.retract(chat_id=chat, reason=f"scored by the bot {AWS}")
        assert (
            back.target_seq == first.outcome_seq and "[REDACTED:aws-access-key-id]" in back.reason
        )
        traces = b.state("traces")
        assert sorted(traces.last_by_chat) == sorted([a.chat_id, b.trace(chat_id=other).chat_id])
        b.kg_set(f"host-{AWS}", "owner", "Priya")  # a kg subject is found by its words too
        assert [f.value for f in b.kg_get(f"host-{AWS}").facts] == ["Priya"]
        assert b.kg_history(f"host-{AWS}", "owner").predicates[0].statements[0].value == "Priya"
    assert leaks(tmp_path / "b") == []
    data = brain_bytes(tmp_path / "b")
    assert not [s for s in (SLACK, OPENAI, AWS) if s.encode() in data]
    assert all(s not in w for w in warnings for s in (SLACK, OPENAI, AWS, TOKEN))
    assert "chat id: slack-token redacted (the brain records and finds this key redacted)" in (
        warnings
    )
    assert "retract reason: aws-access-key-id redacted before recording" in warnings


def test_keys_and_reasons_through_the_cli_never_reach_the_brain(tmp_path: Path, ws: Path) -> None:
    brain = str(tmp_path / "b")
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--workspace", str(ws), "--brain", brain]).exit_code == 0
    for argv in [
        ["query", "--brain", brain, "--chat-id", SLACK, "when do deploys run"],
        ["learn", "--brain", brain, "--chat-id", SLACK, "--outcome", "1", "--request-id", AWS],
        ["learn", "--brain", brain, "--chat-id", SLACK, "--outcome", "1", "--request-id", AWS],
        ["retract", "--brain", brain, "--chat-id", SLACK, "--reason", f"wrong {OPENAI}"],
    ]:
        res = runner.invoke(app, argv)
        assert res.exit_code == 0, res.stderr
        assert not [s for s in (SLACK, AWS, OPENAI) if s in res.stderr]
    data = brain_bytes(tmp_path / "b")
    assert not [s for s in (SLACK, AWS, OPENAI) if s.encode() in data]
    with Brain(tmp_path / "b") as b:
        outcomes = [r for r in b.log.read() if isinstance(r.event, OutcomeRecorded)]
        assert len(outcomes) == 1, "the retried request counted once"
