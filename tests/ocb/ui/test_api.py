"""The window's JSON without HTTP: its source over the daemon's methods in this process,
what a read-only source refuses, the walk an answer carries, the timeline's kinds and
the SQL literals the pages' statements are built with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import given, settings, strategies as st

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.cli.rpc import CommandLine
from ocb.ui import api
from ocb.ui.source import Refused, Source, open_source
from ocb_events.schema import Event

APP = CommandLine(typer.main.get_command(app))


def _tags() -> set[str]:
    def walk(cls: type) -> set[str]:
        out = set()
        for sub in cls.__subclasses__():
            tag = getattr(sub, "__struct_config__", None)
            if tag is not None and isinstance(tag.tag, str):
                out.add(tag.tag)
            out |= walk(sub)
        return out

    return walk(Event)


def test_every_event_type_has_one_kind_on_the_timeline() -> None:
    placed = [t for types in api.KINDS.values() for t in types]
    assert len(placed) == len(set(placed)), "a type in two kinds"
    assert set(placed) == _tags()


@pytest.fixture(scope="module")
def reader(example_brain: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    """A read-only source over a copy of the example brain (shared by the examples: they
    only read)."""
    import shutil

    path = tmp_path_factory.mktemp("ui-reader") / "brain"
    shutil.copytree(example_brain, path)
    with open_source(path, writes=False, app=APP) as src:
        yield src


@settings(max_examples=30)  # each one a query in the analytics worker
@given(text=st.text(max_size=60).map(lambda t: t.replace("\x00", "")))
def test_a_text_passed_to_the_histories_sql_reads_back_as_itself(reader: Source, text: str) -> None:
    got = reader.call("sql", {"statement": "SELECT ? AS t, count(*) AS n FROM events "
                              "WHERE type = ?", "params": [text, text]})  # fmt: skip
    assert got == [{"t": text, "n": 0}]


def test_the_walk_of_a_recorded_answer_is_its_trace(built: Path) -> None:
    with open_source(built, writes=True, app=APP) as src:
        got = src.call("query", {"text": "how do I roll back a bad deploy", "walk": True,
                                 "actor": "ui"})  # fmt: skip
    with Brain(built, writer=False) as b:
        trace = b.trace(got["trace_id"])
        last = list(b.events(types=["query_traced"]))[-1]
    assert last.actor == "ui"
    assert [s["node_id"] for s in got["walk"]["seeds"]] == [s.node_id for s in trace.seeds]
    assert [(s["node"], s["chosen"]) for s in got["walk"]["steps"]] == [
        (s.node, s.chosen) for s in trace.steps
    ]
    assert got["walk"]["fired"] == got["fired"] == list(trace.fired)


def test_an_answer_leaves_its_walk_out_unless_asked(built: Path) -> None:
    with open_source(built, writes=False, app=APP) as src:
        plain = src.call("query", {"text": "who is on call", "record": False})
        walked = src.call("query", {"text": "who is on call", "record": False, "walk": True})
    assert "walk" not in plain
    assert {k: v for k, v in walked.items() if k != "walk"} == plain
    assert walked["walk"]["steps"]


WRITES: list[tuple[str, dict[str, Any]]] = [
    ("query", {"text": "x"}),
    ("recall", {"query": "x"}),
    ("learn", {"outcome": 1.0, "trace_id": "t1"}),
    ("inject", {"node_type": "CORRECTION", "content": "x"}),
    ("retain", {"content": "x"}),
    ("reflect", {}),
    ("kg", {"subject": "a", "action": "set", "predicate": "p", "value": "v"}),
    ("health", {"apply": True}),
    ("maintain", {"ops": ["decay"]}),
    ("config", {"key": "learning.eta", "value": "0.1"}),
    ("sync", {"workspace": "/tmp"}),
]


@pytest.mark.parametrize(("method", "params"), WRITES)
def test_a_read_only_source_refuses_what_records(built: Path, method: str,
                                                 params: dict[str, Any]) -> None:  # fmt: skip
    with open_source(built, writes=False, app=APP) as src:
        before = src.last_seq()
        with pytest.raises(Refused, match="records") as refused:
            src.call(method, params)
        assert "--allow-writes" in refused.value.hint
        for argv in (["query", "x"], ["learn", "--outcome", "1"], ["retract", "--trace", "t1"],
                     ["maintain", "--op", "decay"], ["health", "--apply"]):  # fmt: skip
            with pytest.raises(Refused):
                src.cli(*argv)
        assert src.last_seq() == before


def test_a_read_only_source_reads(built: Path) -> None:
    with open_source(built, writes=False, app=APP) as src:
        assert isinstance(src, Source) and src.mode == "in-process"
        info = api.info(src)
        assert info["writes"] is False and info["budget"] > 0
        got = api.history(src)
        assert {d["kind"] for d in got["days"]} <= set(api.KINDS) | {"other"}
        assert sum(d["n"] for d in got["days"]) == info["last_seq"]
        assert api.asof(src, "1")["health"]["edges"] == 0
        assert api.diff(src, "0", None)["nodes"]["added"] > 0
        assert api.doctor(src)["ok"] is True
        assert api.health(src)["last_sync"]["seq"] > 0


def test_the_shell_loads_exactly_the_files_the_window_serves() -> None:
    import re
    from importlib import resources

    from ocb.ui.app import STATIC

    static = resources.files("ocb.ui").joinpath("static")
    shell = static.joinpath("index.html").read_text("utf-8")
    named = set(re.findall(r'(?:src|href)="/static/([^"]+)"', shell))
    assert named == set(STATIC)
    on_disk = {p.name for p in static.iterdir() if p.name != "index.html"}  # type: ignore[attr-defined]
    assert on_disk == set(STATIC)
