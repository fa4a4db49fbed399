"""``ocb verify --repair`` on a brain whose log holds a record edited with its checksum
fixed: the record becomes a tombstone named in the report, the forged value is gone
from the brain, and nothing built from the history before the repair is used again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb_events.links import UNLINKED
from ocb_events.log import SegmentLog
from ocb_events.schema import KgFactSet, RecordLost
from tests.ocb_events.tamper import replace_text

runner = CliRunner()
SUBJECT = "Discord API"  # the subject of the facts fixture (conftest)


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


def _history(path: Path) -> list[str]:
    code, out, err = ocb("kg", "history", SUBJECT, "--brain", path, "--json")
    assert code == 0, err
    return [s["value"] for p in json.loads(out)["predicates"] for s in p["statements"]]


def test_a_kg_value_edited_with_its_checksum_fixed_is_never_blessed(
    facts: tuple[Path, int], tmp_path: Path
) -> None:
    path, seq = facts
    assert _history(path) == ["Alice", "100/min", "120/min", "150/min"]
    old_snapshots = tmp_path / "old-snapshots"
    shutil.copytree(path / "snapshots", old_snapshots)
    shutil.copy(path / "cache" / "analytics.duckdb", tmp_path / "analytics.duckdb")
    replace_text(path / "log", seq, b"120/min", b"999/min", rechain=False)

    code, out, _ = ocb("verify", "--brain", path)
    assert code == 1
    assert out.splitlines()[0].startswith(f"FAIL  log: log corrupt at seq {seq} ")
    assert out.splitlines()[0].endswith("hash chain broken")

    code, out, err = ocb("verify", "--brain", path, "--repair")
    assert code == 0, out + err
    assert f"seqs lost (now tombstones): {seq};" in out
    assert f"records that did not match their hash chain (tampered): {seq}\n" in out
    assert f"a head kept at its seq tells which): {seq - 1}\n" in out
    assert f"hash chain recomputed from seq {seq};" in out
    recorded = seq + 3  # two statements after it, then log_repaired
    assert f"recorded as log_repaired at seq {recorded}" in out
    seqs = {int(p.name[-25:-5]) for p in (path / "snapshots").glob("*.snap")}
    assert seqs and all(s < seq or s == recorded for s in seqs), "none of the old history"

    code, out, _ = ocb("verify", "--brain", path)
    assert code == 0, out
    assert _history(path) == ["Alice", "100/min", "150/min"], "neither forged nor kept"
    with SegmentLog(path / "log", writer=False) as log:
        lost = next(iter(log.read(seq, seq)))
        assert isinstance(lost.event, RecordLost) and lost.event.reason == UNLINKED
        assert not any(
            isinstance(r.event, KgFactSet) and r.event.value == "999/min" for r in log.read()
        )

    # what was built from the history before the repair is never used with the new one
    shutil.rmtree(path / "snapshots")
    shutil.copytree(old_snapshots, path / "snapshots")
    shutil.copy(tmp_path / "analytics.duckdb", path / "cache" / "analytics.duckdb")
    warnings: list[str] = []
    with Brain(path, writer=False, warn=warnings.append) as b:
        statements = b.kg_history(SUBJECT, "rate_limit").predicates[0].statements
        assert [s.value for s in statements] == ["100/min", "150/min"]
    assert any("another history" in w for w in warnings)
    code, out, err = ocb(
        "sql", "--brain", path, f"SELECT type FROM events WHERE seq = {seq}", "--json"
    )
    assert code == 0 and "built from another history" in err
    assert json.loads(out) == [{"type": "record_lost"}]


def test_the_repair_names_tampered_records_in_json(facts: tuple[Path, int]) -> None:
    path, seq = facts
    replace_text(path / "log", seq, b"120/min", b"999/min", rechain=False)
    code, out, _ = ocb("verify", "--brain", path, "--repair", "--json")
    assert code == 0
    got = json.loads(out)
    assert got["repair"]["lost"] == [{"first": seq, "last": seq}]
    assert got["repair"]["tampered"] == [{"first": seq, "last": seq}]
    assert got["repair"]["rebased_from"] == seq and got["repair"]["renewed"] == []
    assert got["repair"]["unconfirmed"] == [seq - 1]
    assert got["ok"] and got["head"]["seq"] == got["repair"]["recorded"] == seq + 3
