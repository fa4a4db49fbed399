"""Secrets never reach the brain directory: a token pasted into a note, a retained fact,
an injected node, a kg value or a query is recorded redacted (checked on the raw bytes
of the log segments, blobs, snapshots and caches), the file on disk stays as it is, and
a warning names where it was without repeating it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.engine.dates import day_start
from ocb.memory.reflect import reflect
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
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
        [change] = [c for c in reflect(b, "7d").changes if c.change == "entity_summary"]
        assert TOKEN in change.before  # what the page held, shown to the user only
    assert warnings == ["reflect bank/entities/Peter.md: github-token redacted before recording"]
    assert leaks(tmp_path / "b") == []
