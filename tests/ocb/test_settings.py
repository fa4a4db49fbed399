"""The settings registry: every key of every section is known, validated before it
is recorded, recorded once, and read back, by the API and by ``ocb config``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import pytest
import typer.testing
from msgspec import Meta
from typer.main import get_command
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.settings import SECTIONS, Memory, Setting, Traversal, Value, registry
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import ConfigChanged
from tests.golden_files import check

runner = CliRunner()
COMMAND = get_command(app)


@pytest.fixture(autouse=True)
def built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner builds the click command once, not on every call (these tests run
    the CLI over a hundred times)."""
    monkeypatch.setattr(typer.testing, "_get_command", lambda _app: COMMAND)


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


class Extras(msgspec.Struct, frozen=True):
    """A section with text values, as a later section may have."""

    action: Annotated[
        Literal["redact", "refuse", "off"],
        Meta(description="what sync does with a secret", extra={"noun": "secret action"}),
    ] = "redact"
    placeholder: Annotated[str, Meta(description="text put in place of a secret")] = "[secret]"
    label: Annotated[str, Meta(description="a short label", min_length=1, max_length=8)] = "key"
    strict: Annotated[bool, Meta(description="refuse files with secrets")] = False


@pytest.fixture
def with_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SECTIONS, "extras", Extras)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("# Deploys\n\nRoll back with the deploy tool.\n")
    path = tmp_path / "brain"
    b, _ = Brain.init(path, ws, clock=TickClock(), durability="none")
    b.close()
    return path


def log_bytes(brain: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((brain / "log").glob("*.seg"))}


def another_value(s: Setting) -> Value:
    """A valid value of ``s`` other than its default."""
    if s.choices:
        return next(c for c in s.choices if c != s.default)
    if s.kind is bool:
        return not s.default
    if s.kind is str:
        return "other"
    assert isinstance(s.default, (int, float))
    for candidate in (s.default + 1, s.default - 1, s.default / 2, 0.5, 1):
        value = s.kind(candidate)
        if value != s.default:
            try:
                return s.check(value)
            except InputError:
                continue
    raise AssertionError(f"no other valid value for {s.key}")


# --------------------------------------------------------------------------- registry


def test_the_registry_knows_every_field_of_every_section_with_a_description() -> None:
    keys = {f"{n}.{f.name}" for n, c in SECTIONS.items() for f in msgspec.structs.fields(c)}
    assert set(registry()) == keys and len(keys) >= 59
    assert {s.section for s in registry().values()} == set(SECTIONS)
    assert all(s.description for s in registry().values())
    assert registry()["traversal.mode"].choices == ("edge", "edge+sim", "learned")
    assert registry()["learning.rule"].choices == ("transfer", "route", "pg", "heuristic")


def test_every_default_is_within_its_own_bounds(with_extras: None) -> None:
    for key, s in registry().items():
        assert s.check(s.default) == s.default, key
        assert type(s.default) is s.kind, key


def test_a_new_section_is_known_everywhere_once_it_is_in_sections(with_extras: None) -> None:
    s = registry()["extras.placeholder"]
    assert (s.kind, s.default, s.description) == (str, "[secret]", "text put in place of a secret")
    assert s.check("<hidden>") == "<hidden>"
    with pytest.raises(InputError, match="unknown secret action 'shout'"):
        registry()["extras.action"].check("shout")
    with pytest.raises(
        InputError, match=r"extras.label must be at least 1 and at most 8 characters long, got 9"
    ):
        registry()["extras.label"].check("123456789")
    with pytest.raises(InputError, match="extras.strict must be true or false"):
        registry()["extras.strict"].check("maybe")


def test_bad_values_are_refused_with_the_bounds_in_the_message() -> None:
    hop = registry()["memory.hop_decay"]
    with pytest.raises(InputError, match=r"memory.hop_decay must be at least 0 and at most 1"):
        hop.check("1.5")
    with pytest.raises(InputError, match="must be a finite float, got 'nan'"):
        hop.check("nan")
    with pytest.raises(InputError, match="must be a finite int, got 2.5"):
        registry()["memory.max_chars"].check(2.5)
    assert registry()["memory.max_chars"].check("1_500") == 1500


def test_every_section_resolves_through_the_registry(small: Path) -> None:
    with Brain(small, clock=TickClock()) as b:
        b.set_config("memory.hop_decay", "0.7")
        b.set_config("traversal.max_hops", 5)
        assert b.setting(Memory).hop_decay == 0.7
        assert b.store.settings()[0].max_hops == b.setting(Traversal).max_hops == 5
        assert b.setting(Traversal, max_hops=2).max_hops == 2
        # a value recorded under older rules gives way to the default
        b.store.record(
            [ConfigChanged(key="traversal.tau", value=-1.0)], "cli", expected_seq=b.log.last_seq
        )
        assert b.setting(Traversal).tau == 1.0


# --------------------------------------------------------------------------- ocb config


def test_every_key_is_recorded_once_and_read_back(small: Path, with_extras: None) -> None:
    for key, s in registry().items():
        value = another_value(s)
        with Brain(small, writer=False) as b:
            before = b.log.last_seq
        code, out, err = ocb("config", "--brain", small, key, value)
        assert (code, err) == (0, ""), key
        assert out.startswith(f"{key} = {json.dumps(value)}   (recorded)\n"), key
        with Brain(small, writer=False) as b:
            new = [r.event for r in b.events(since=before)]
        assert new == [ConfigChanged(key=key, value=value)], key
        code, out, _ = ocb("config", "--brain", small, key, "--json")
        shown = json.loads(out)
        assert (code, shown["settings"], shown["recorded"]) == (0, {key: value}, [key]), key
        assert shown["keys"][key]["default"] == s.default


def test_memory_hop_decay_is_recorded_and_read_back(small: Path) -> None:
    code, out, err = ocb("config", "--brain", small, "memory.hop_decay", "0.25")
    assert (code, err) == (0, "")
    assert out == (
        "memory.hop_decay = 0.25   (recorded)\n"
        "  activation kept per hop of associative recall\n"
        "  number, at least 0 and at most 1; default 0.5\n"
    )
    code, out, _ = ocb("config", "--brain", small, "memory.hop_decay")
    assert (code, out.splitlines()[0]) == (0, "memory.hop_decay = 0.25   (recorded)")
    code, out, _ = ocb("config", "--brain", small)
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(registry())
    assert "memory.hop_decay = 0.25   (recorded)" in lines
    assert "storage.snapshot_tail = 500" in lines and 'traversal.mode = "edge"' in lines
    assert {line.split(".")[0] for line in lines} == set(SECTIONS)


def test_unknown_keys_and_bad_values_record_nothing(small: Path) -> None:
    before = log_bytes(small)
    for args, error in [
        (("memory.hop_decai", "0.5"), "unknown setting 'memory.hop_decai'"),
        (("memory.hop_decai",), "unknown setting 'memory.hop_decai'"),
        (("memory.hop_decay", "2"), "memory.hop_decay must be at least 0 and at most 1, got 2"),
        (("traversal.mode", "telepathy"), "unknown route mode 'telepathy'"),
        (("storage.snapshot_tail", "lots"), "storage.snapshot_tail must be a finite int"),
    ]:
        code, out, err = ocb("config", "--brain", small, *args)
        assert (code, out) == (1, ""), args
        assert err.startswith(f"error: {error}") and len(err.splitlines()) == 2, err
    code, _, err = ocb("config", "--brain", small, "memory.hop_decai")
    assert err.splitlines()[1].startswith("hint: did you mean memory.hop_decay, ")
    assert log_bytes(small) == before


def test_config_json_is_stable(small: Path) -> None:
    ocb("config", "--brain", small, "memory.hop_decay", "0.25")
    code, out, _ = ocb("config", "--brain", small, "--json")
    assert code == 0
    check("cli/config.json", out)


def test_a_section_field_of_an_unsupported_type_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Odd(msgspec.Struct, frozen=True):
        """A section whose field no setting can hold."""

        ratio: Annotated[list[int], Meta(description="not a scalar")] = msgspec.field(
            default_factory=list
        )

    monkeypatch.setitem(SECTIONS, "odd", Odd)
    with pytest.raises(TypeError, match="setting odd.ratio must be an int"):
        registry()
