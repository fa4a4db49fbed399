"""The command line reaches the product only through ``ocb.brain.Brain``.

Every module under ``ocb/cli/`` is parsed, and every import in it counts, at any
depth (the commands import lazily, inside their functions). An import of one of our
packages must be in ``ALLOWED``: the brain, the CLI itself, the result structs, the
settings and the event errors, schema and codec (used to validate options and to
print events), and the JSON every client reads (``ocb.wire``). The feature modules
(``ocb.graph``, ``ocb.memory``, ``ocb.upkeep``, ``ocb.checks``, ``ocb.engine``,
``ocb.store``, ``ocb.whatif``, ``ocb.scratch``) and the ``replay`` and
``projections`` packages are reached through a ``Brain`` method.
The one exception: a renderer (``ocb/cli/render/``) may name a result type under
``if TYPE_CHECKING:``, which imports nothing when the program runs.

A failure names each offending import, e.g.::

    ocb/cli/kg.py:46 imports ocb.memory.kg: call a Brain method instead (allowed:
    ocb.brain, ocb.cli.*, ocb.reports, ocb.settings, ocb_events.codec,
    ocb_events.errors, ocb_events.schema)
"""

from __future__ import annotations

from pathlib import Path

from tests.import_scan import imports

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "ocb" / "cli"
OURS = {"ocb", "ocb_events", "projections", "replay", "workspace_sync"}
ALLOWED = {
    "ocb.brain",
    "ocb.reports",
    "ocb.settings",
    "ocb_events.codec",
    "ocb_events.errors",
    "ocb_events.schema",
}
"""What a CLI module may import from our packages, besides ``ocb.cli`` and its modules."""


def allowed(module: str) -> bool:
    if module.split(".")[0] not in OURS:
        return True  # the standard library and third-party packages
    if module.startswith("ocb.daemon."):  # the serve commands run the daemon
        return True
    if module == "ocb.mcp" or module.startswith("ocb.mcp."):  # ocb mcp runs the MCP server
        return True
    if module == "ocb.ui" or module.startswith("ocb.ui."):  # ocb ui runs the window
        return True
    if module == "ocb.wire" or module.startswith("ocb.wire."):  # --json prints the wire's JSON
        return True
    return module in ALLOWED or module == "ocb.cli" or module.startswith("ocb.cli.")


def offences(path: Path) -> list[str]:
    types_exempt = CLI / "render" in path.parents
    source = path.read_text(encoding="utf-8")
    return [
        f"{path.relative_to(ROOT)}:{line} imports {module}: call a Brain method instead "
        f"(allowed: ocb.brain, ocb.cli.*, {', '.join(sorted(ALLOWED - {'ocb.brain'}))})"
        for line, module in sorted(imports(source, types_exempt=types_exempt))
        if not allowed(module)
    ]


def test_cli_modules_import_only_the_brain() -> None:
    paths = sorted(CLI.rglob("*.py"))
    assert len(paths) > 10  # the scan found the command modules
    found = [o for p in paths for o in offences(p)]
    assert not found, "\n".join(found)


def test_the_scan_sees_lazy_and_type_only_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from replay.verify import Check\n"
        "def run():\n"
        "    from ocb.memory.kg import kg_get\n"
        "    import ocb.brain\n"
    )
    bad = [m for _, m in imports(source, types_exempt=False) if not allowed(m)]
    assert sorted(bad) == ["ocb.memory.kg", "replay.verify"]
    bad = [m for _, m in imports(source, types_exempt=True) if not allowed(m)]
    assert bad == ["ocb.memory.kg"]
