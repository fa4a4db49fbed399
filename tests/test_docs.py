"""The docs say what the code does: every fenced example of README.md and docs/*.md
runs, and the command-line reference is the golden help it is generated from.

An example runs unless its fence says ``no-run`` (```` ```bash no-run ````): installs,
servers that do not exit, long benchmarks, paths of the reader's machine. A ``bash``
block is ``ocb`` commands, one a line, run in-process against a brain of a fresh copy
of ``examples/workspace`` (``/tmp/brain`` and ``examples/workspace`` in the text name
them); a ``python`` block is executed with the same paths; a ``sql`` block is run by
``ocb sql``. The examples of one page share one brain, in the page's order.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb.daemon.client import split_no_daemon
from ocb_events.schema import EVENT_TYPES
from tests.gen_cli_docs import TARGET, generate
from tests.ocb.cli.support import ocb
from tests.ocb.support import fresh_copy

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = {"bash", "python", "sql"}
"""The languages whose examples run; any other fence is shown, never run."""
SHOWN = {"text", "json", "json5", "jsonl", "markdown"}
COMMENT = re.compile(r"(^|\s)#(\s.*)?$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: where it starts, its language and flags, its text."""

    page: Path
    line: int
    lang: str
    flags: tuple[str, ...]
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUN and "no-run" not in self.flags


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order."""
    found: list[Block] = []
    opened: tuple[int, list[str]] | None = None
    body: list[str] = []
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("```"):
            body.append(line)
            continue
        if opened is None:
            opened, body = (n, line[3:].split()), []
        else:
            info = opened[1] or [""]
            found.append(Block(page, opened[0], info[0], tuple(info[1:]), "\n".join(body)))
            opened = None
    assert opened is None, f"{page.relative_to(ROOT)}:{opened[0]}: a fence is never closed"
    return found


def commands(text: str) -> list[list[str]]:
    """The ``ocb`` command lines of a bash block, without comments, as argv lists."""
    argvs = []
    for raw in text.splitlines():
        line = COMMENT.sub("", raw).strip()
        if line:
            argvs.append(shlex.split(line))
    return argvs


@pytest.fixture(scope="module")
def docs_brain(example_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ocb init`` of the example workspace, as the README's reader runs it."""
    workspace = fresh_copy(example_home / "workspace")
    path = tmp_path_factory.mktemp("docs") / "brain"
    code, out, err = ocb("init", "--workspace", workspace, "--brain", path)
    assert code == 0, out + err
    return path


def run(block: Block, brain: Path, workspace: Path) -> None:
    """Run one example; fail naming it, with its output, unless it exits 0."""
    text = block.text.replace("/tmp/brain", str(brain))
    text = text.replace("examples/workspace", str(workspace))
    if block.lang == "python":
        exec(compile(text, block.where, "exec"), {"__name__": "__docs__"})
        return
    argvs = [["ocb", "sql", text, "--brain", str(brain)]] if block.lang == "sql" else commands(text)
    for argv in argvs:
        assert argv[0] == "ocb", f"{block.where}: runs {argv[0]!r}; only ocb runs (or no-run)"
        args, _ = split_no_daemon(argv[1:], {})  # as the ocb script reads it
        code, out, err = ocb(*args)
        assert code == 0, f"{block.where}: {shlex.join(argv)} exited {code}\n{out}{err}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_example_of_the_page_runs(
    page: Path, docs_brain: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCB_NO_DAEMON", "1")
    monkeypatch.delenv("OCB_BRAIN", raising=False)
    monkeypatch.chdir(tmp_path)
    brain = tmp_path / "brain"
    shutil.copytree(docs_brain, brain)
    for block in blocks(page):
        assert block.lang in RUN | SHOWN, f"{block.where}: fence language {block.lang!r}"
        if block.runs:
            run(block, brain, workspace)


def test_the_readme_starts_with_the_two_commands() -> None:
    first = blocks(ROOT / "README.md")[0]
    assert first.line == 3 and first.flags == ("no-run",)
    assert first.text.splitlines() == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e . && "
        ".venv/bin/ocb demo --workspace examples/workspace",
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]' && "
        ".venv/bin/python -m pytest",
    ]


def test_every_page_runs_some_example_or_shows_none() -> None:
    """A page with bash or python examples runs at least one of them: marking all of a
    page's examples no-run would let the page drift unchecked."""
    for page in PAGES:
        code = [b for b in blocks(page) if b.lang in RUN]
        if len(code) > 1:
            assert any(b.runs for b in code), f"{page.name}: every example is no-run"


def test_links_between_pages_name_files_that_exist() -> None:
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_the_python_page_names_every_public_method_of_brain() -> None:
    text = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    public = sorted(name for name in dir(Brain) if not name.startswith("_"))
    missing = [n for n in public if not re.search(rf"`(Brain\.)?{n}[(`]", text)]
    assert missing == [], f"docs/python.md does not describe Brain.{missing}"


def test_the_storage_page_names_every_event_type() -> None:
    text = (ROOT / "docs" / "storage.md").read_text(encoding="utf-8")
    tags = sorted(t.__struct_config__.tag for t in EVENT_TYPES)
    missing = [tag for tag in tags if f"`{tag}`" not in text]
    assert missing == [], f"docs/storage.md does not name the event types {missing}"


def test_the_cli_reference_is_the_golden_help() -> None:
    if os.environ.get("OCB_UPDATE_GOLDEN") == "1":
        TARGET.write_text(generate(), encoding="utf-8")
    assert TARGET.read_text(encoding="utf-8") == generate(), (
        "docs/cli.md differs from the golden help: run python -m tests.gen_cli_docs"
    )
