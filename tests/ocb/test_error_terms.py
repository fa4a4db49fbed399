"""The library's errors name its parameters, not the CLI's flags: a Python or MCP caller
is told about ``depth``, and the CLI prints ``--associative-depth`` for it, as it
always did."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.cli.flags import flag_of, in_flags, rendered
from ocb_events.errors import InputError, unknown

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("ocb", "ocb_events", "workspace_sync", "replay", "projections")
FRONT_ENDS = ("ocb/cli/", "ocb/daemon/", "ocb/mcp/", "ocb/ui/")
CALLS = {"InputError", "unknown", "unknown_with"}
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
PARAM = re.compile(r"`([a-z_][a-z0-9_]*)(?:=[^`]*)?`")

# Library errors that still name a CLI flag, by module: CLI examples in hints
# (``ocb query --json``) and replay's points and limits. The list only shrinks: a new
# one fails, and so does one that no longer happens.
KNOWN_FLAGS: dict[str, list[str]] = {
    "ocb/checks/verify.py": ["--head", "--head", "--head", "--head", "--repair"],
    "ocb/graph/inject.py": ["--json", "--node"],
    "ocb/graph/learn.py": ["--json", "--json"],
    "ocb/graph/query.py": ["--json"],
    "ocb/graph/retract.py": ["--limit", "--since", "--type", "--type"],
    "ocb/graph/route.py": ["--apply"],
    "ocb/memory/recall_service.py": ["--json"],
    "ocb/memory/retain.py": ["--entity", "--entity"],
    "ocb/memory/unretain.py": ["--json"],
    "ocb/paths.py": ["--brain", "--brain"],
    "ocb/upkeep/maintain.py": ["--json"],
}  # fmt: skip


def _error_calls() -> list[tuple[str, ast.Call]]:
    """Every InputError (or ``unknown``) a library module builds, with its module."""
    out = []
    for package in LIBRARY:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(FRONT_ENDS):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    f = node.func
                    name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                    if name in CALLS:
                        out.append((rel, node))
    return out


def _texts(call: ast.Call) -> list[str]:
    """The string parts of a call's positional arguments (its message and hint)."""
    return [
        n.value
        for arg in call.args
        for n in ast.walk(arg)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _declared(call: ast.Call) -> set[str]:
    """The names a call's ``param=`` lists."""
    for kw in call.keywords:
        if kw.arg == "param":
            return {n.value for n in ast.walk(kw.value) if isinstance(n, ast.Constant)}
    return set()


def test_no_library_error_names_a_new_cli_flag() -> None:
    named: dict[str, Counter[str]] = {}
    for rel, call in _error_calls():
        flags = [f for text in _texts(call) for f in FLAG.findall(text)]
        if flags:
            named.setdefault(rel, Counter()).update(flags)
    found = {rel: sorted(flags.elements()) for rel, flags in sorted(named.items())}
    assert found == KNOWN_FLAGS, "speak in parameter names (`top`, param=) in the library"


def test_every_parameter_an_error_names_is_declared() -> None:
    undeclared = sorted(
        f"{rel}:{call.lineno} {name}"
        for rel, call in _error_calls()
        for name in {m for text in _texts(call) for m in PARAM.findall(text)}
        if name not in _declared(call)
    )
    assert undeclared == [], "list each named parameter in param= so the CLI renders it"


def test_an_input_error_carries_the_parameters_it_names() -> None:
    err = InputError("`start` 3 is after `end` 2", "give the earlier point", param=("start", "end"))
    assert (err.param, err.params, err.message) == ("start", ("start", "end"), err.args[0])
    assert InputError("empty").params == () and InputError("empty").param == ""
    near = unknown("node", "a.md::9", ["a.md::0"], "hint", param="node_ids")
    assert near.params == ("node_ids",)


def test_the_cli_writes_each_named_parameter_as_its_flag() -> None:
    params = ("depth", "max_hops")
    assert flag_of("depth") == "--associative-depth" and flag_of("max_hops") == "--max-hops"
    assert in_flags("`depth` must be 0 or more", params) == "--associative-depth must be 0 or more"
    assert in_flags("pass `depth=2` or `max_hops=3`", params) == (
        "pass --associative-depth 2 or --max-hops 3"
    )
    # a command that names a parameter otherwise
    warm = InputError("no transcripts given", "pass `paths=PATH`", param="paths")
    assert rendered(warm, warm.message, warm.hint, "warm") == (
        "no transcripts given",
        "pass --sessions PATH",
    )
    # only what the error lists: a CLI example or another name stays as it is
    assert in_flags("list ids from `ocb query --json`, not `top`", params) == (
        "list ids from `ocb query --json`, not `top`"
    )


def test_python_callers_see_parameter_names(brain: Brain) -> None:
    with pytest.raises(InputError) as err:
        brain.recall("deploy", depth=-1)
    assert (err.value.message, err.value.param) == ("`depth` must be 0 or more", "depth")
    with pytest.raises(InputError) as err:
        brain.query("deploy", top=0)
    assert (err.value.message, err.value.hint) == (
        "`top` must be at least 1, got 0",
        "pass `top=5`",
    )


@pytest.mark.parametrize(
    ("args", "lines"),
    [
        (
            ["query", "deploy", "--top", "0"],
            ["error: --top must be at least 1, got 0", "hint: pass --top 5"],
        ),
        (
            ["recall", "deploy", "--associative-depth", "-1"],
            ["error: --associative-depth must be 0 or more", "hint: use 0, 1 or 2"],
        ),
        (
            ["events", "--since", "-5"],
            ["error: --since must be a seq of 0 or more, got -5", "hint: pass --since 0"],
        ),
        (
            ["anchor", "--authority", "canonical"],
            ["error: nothing to anchor", "hint: pass --node ID (repeatable) or --file PATH"],
        ),
        (
            ["forget", "--reason", "r"],
            [
                "error: say what to forget: one of --seq, --file, --fact or --text",
                'hint: e.g. --text "ghp_..." --reason "a token pasted by mistake"',
            ],
        ),
        (
            ["retract"],
            [
                "error: retract needs exactly one of --seq, --node, --trace or --chat-id",
                "hint: e.g. --seq 1234, or --chat-id c1 for that chat's last outcome",
            ],
        ),
        (
            ["diff", "--from", "3", "--to", "2"],
            ["error: --from 3 is after --to 2", "hint: give the earlier point as --from"],
        ),
        (
            ["learn", "--outcome", "1", "--chat-id", "nobody"],
            ["error: unknown chat id 'nobody'", "hint: pass --chat-id to ocb query first"],
        ),
        (
            ["retract", "--chat-id", "nobody"],
            ["error: unknown chat id 'nobody'", "hint: pass --chat-id to ocb query first"],
        ),
        (
            ["learn", "--outcome", "1"],
            [
                "error: nothing to learn from",
                "hint: pass --trace ID, --chat-id ID or --fired-ids A,B,C",
            ],
        ),
        (
            ["inject", "--type", "TEACHING", "--content", "x", "--all"],
            [
                "error: --all vetoes every chunk that fired in a corrected trace",
                "hint: use it with --type CORRECTION and --chat-id or --trace, without --target",
            ],
        ),
        (
            ["retain", "Alice owns billing", "--confidence", "0.5"],
            [
                "error: only opinions (--type O) and claims (--speaker assistant) carry a "
                "confidence",
                "hint: drop --confidence",
            ],
        ),
    ],
)
def test_cli_errors_name_the_flags_as_before(
    built: Path, args: list[str], lines: list[str]
) -> None:
    res = CliRunner().invoke(app, [*args, "--brain", str(built)], prog_name="ocb")
    assert (res.exit_code, res.stderr.splitlines()) == (1, lines)
