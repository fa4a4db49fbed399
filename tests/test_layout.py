"""The shape of the code: curated public surfaces, imports pointing inward and down the
layers of ocb, no import cycle, tests sharing code only through support modules, lint."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from tests.import_scan import imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["ocb", "ocb_events", "projections", "replay", "workspace_sync"]
OURS = set(PACKAGES)
# which of our packages each package may import (besides itself)
ALLOWED = {
    "ocb_events": set(),
    "projections": {"ocb_events.schema"},
    "replay": {"ocb_events", "projections"},
    "workspace_sync": {"ocb_events"},
    "ocb": {"ocb_events", "projections", "replay", "workspace_sync"},
}


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_names_what_the_package_defines(package: str) -> None:
    mod = importlib.import_module(package)
    names = mod.__all__
    assert names == sorted(names) and len(names) == len(set(names))
    for name in names:
        assert hasattr(mod, name), f"{package}.__all__ names missing {name}"


def imports_of(path: Path) -> set[str]:
    return {module for _, module in imports(path.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_inward(package: str) -> None:
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in imports_of(path):
            top = name.split(".")[0]
            if top not in OURS or top == package:
                continue
            allowed = ALLOWED[package]
            assert name in allowed or top in allowed, f"{path.relative_to(ROOT)} imports {name}"


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_lint(command: list[str]) -> None:
    exe = shutil.which(command[0], path=str(Path(sys.executable).parent))
    assert exe, f"{command[0]} is not installed (pip install -e '.[dev]')"
    proc = subprocess.run([exe, *command[1:]], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ------------------------------------------------------------------ the layers of ocb

# Inside ocb, imports point down these layers and never up (docs/design.md, "The map of
# packages"):
#
#   cli -> mcp -> daemon -> brain (the facade), wire -> whatif, checks -> graph, memory, upkeep
#       -> engine, store -> settings, redaction, reports -> setting_checks
#       -> replay, projections, workspace_sync, ocb_events (ALLOWED, above)
#
# A unit is a subpackage or a top-level module of ocb. Each may import its own modules,
# the lower packages, and the units listed for it here.
BASE = {"ocb.settings", "ocb.redaction", "ocb.reports"}
FEATURES = {"ocb.graph", "ocb.memory", "ocb.upkeep"}
CORE = {"ocb.engine", "ocb.store", "ocb.shared_log", *BASE}
BRAIN_PARTS = {"ocb.brain_checks", "ocb.brain_history", "ocb.brain_memory"}
LAYERS: dict[str, set[str]] = {
    "ocb.setting_checks": set(),  # a key's entry and the checks of its values
    "ocb.settings": {"ocb.setting_checks"},
    "ocb.redaction": {"ocb.settings"},
    "ocb.reports": {"ocb.settings"},
    "ocb.engine": {"ocb.settings"},
    "ocb.paths": set(),  # where a brain may live
    "ocb.shared_log": {"ocb.paths"},  # where its log lives: local, or on PostgreSQL
    "ocb.store": {"ocb.engine", "ocb.paths", "ocb.shared_log", *BASE},
    "ocb.log_migrate": {"ocb.shared_log"},  # ocb log migrate: the log to PostgreSQL and back
    "ocb.graph": CORE,
    "ocb.memory": CORE,
    "ocb.upkeep": CORE,
    "ocb.scratch": FEATURES | CORE,  # the what-if's replay engine
    "ocb.whatif": {"ocb.scratch", *FEATURES, *CORE},
    "ocb.checks": FEATURES | CORE,
    # the facade's command groups (Brain inherits them)
    "ocb.brain_checks": {"ocb.checks", "ocb.log_migrate", *FEATURES, *CORE},
    "ocb.brain_history": CORE,
    "ocb.brain_memory": FEATURES | CORE,
    "ocb.brain": {*BRAIN_PARTS, "ocb.checks", "ocb.scratch", "ocb.whatif", *FEATURES, *CORE},
    # the JSON of what the facade returns: it names the features' result types only
    "ocb.wire": {"ocb.checks", "ocb.whatif", *FEATURES, *CORE},
}
# the daemon serves the facade: its methods answer with the wire's JSON (the CLI hands
# it only the command line that its ``cli`` method runs)
LAYERS["ocb.daemon"] = set(LAYERS) | {"ocb"}
# the MCP server: a thin layer over the daemon's protocol (its client, or its methods
# run in-process)
LAYERS["ocb.mcp"] = {"ocb.daemon", "ocb"}
# the window (ocb ui): a thin layer over the daemon's protocol too, and the JSON of its
# pages; the CLI hands it the command line its pages' commands run in
LAYERS["ocb.ui"] = {"ocb.daemon", "ocb"}
LAYERS["ocb.cli"] = set(LAYERS)  # the top: anything in ocb
# the ocb script: the daemon's thin client, else the CLI
LAYERS["ocb.entry"] = {"ocb.daemon", "ocb.cli"}
# the package itself: its public surface names the facade and the structs it returns
# (exported lazily, so importing ocb loads nothing else)
LAYERS["ocb"] = set(LAYERS) - {"ocb.cli", "ocb.daemon", "ocb.entry", "ocb.mcp", "ocb.ui"}
# graph, memory and upkeep are peers: one may import another only where listed here
# (importer module, imported module), so any new one fails.
PEER_IMPORTS: set[tuple[str, str]] = {
    # retain and reflect write Markdown, then record it as the workspace sync does
    ("ocb.memory.retain", "ocb.graph.sync"),
    ("ocb.memory.reflect", "ocb.graph.sync"),
    ("ocb.memory.unretain", "ocb.graph.sync"),
    # compact moves daily notes' facts to bank pages, recorded by the sync with their ids
    ("ocb.memory.compact", "ocb.graph.sync"),
}
# Upward imports allowed for now (module -> module): none. The set only shrinks: an
# entry that no longer happens fails too.
KNOWN_UPWARD: set[str] = set()


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
}


def resolve(name: str) -> str:
    """The product module an import of ``name`` loads (its longest existing prefix), or
    ``name`` itself when no such module exists (yet)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in MODULES:
            return ".".join(parts[:i])
    return name


def imported_modules(module: str) -> list[tuple[int, str]]:
    """(line, module) of every import of ``module`` (ast.walk: imports inside functions
    and under ``if TYPE_CHECKING:`` count), names resolved to the modules they load."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, resolve(a.name)) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                origin = f"{base}.{origin}" if origin else base
            out += [(node.lineno, resolve(f"{origin}.{a.name}")) for a in node.names]
    return sorted(set(out))


def unit_of(module: str) -> str | None:
    """The LAYERS unit ``module`` belongs to (``ocb`` holds only the package itself)."""
    parts = module.split(".")
    for i in range(len(parts), 1, -1):
        if ".".join(parts[:i]) in LAYERS:
            return ".".join(parts[:i])
    return "ocb" if module == "ocb" else None


def may_import(unit: str, target: str) -> bool:
    return unit == target or target in LAYERS[unit]


def test_every_module_of_ocb_has_a_layer() -> None:
    """A new subpackage or top-level module of ocb is placed in LAYERS first."""
    missing = [m for m in MODULES if m.split(".")[0] == "ocb" and unit_of(m) is None]
    assert missing == [], f"add to LAYERS in tests/test_layout.py: {', '.join(missing)}"


def upward_imports() -> dict[str, str]:
    """Every import inside ocb its layer does not allow: "importer -> imported" mapped
    to the line that names it and why."""
    found: dict[str, str] = {}
    for module in sorted(m for m in MODULES if m.split(".")[0] == "ocb"):
        unit = unit_of(module)
        for line, target in imported_modules(module):
            target_unit = unit_of(target)
            if unit is None or target_unit is None or may_import(unit, target_unit):
                continue
            if (module, target) in PEER_IMPORTS:
                continue
            allowed = ", ".join(sorted(LAYERS[unit])) or "nothing"
            where = MODULES[module].relative_to(ROOT)
            found[f"{module} -> {target}"] = (
                f"{where}:{line} imports {target}: {unit} may import only {allowed} "
                "(and replay, projections, workspace_sync, ocb_events)"
            )
    return found


def test_imports_inside_ocb_point_down_the_layers() -> None:
    """No module of ocb imports a layer above its own, nor a peer feature outside
    PEER_IMPORTS. A violation reads, for example:

        ocb/upkeep/maintain.py:35 imports ocb.brain: ocb.upkeep may import only
        ocb.engine, ocb.redaction, ocb.reports, ocb.settings, ocb.store (and replay,
        projections, workspace_sync, ocb_events)

    KNOWN_UPWARD may only shrink, and an entry that no longer happens fails as well
    (remove it).
    """
    found = upward_imports()
    new = [why for pair, why in sorted(found.items()) if pair not in KNOWN_UPWARD]
    gone = sorted(KNOWN_UPWARD - set(found))
    assert new == [], "imports pointing up:\n" + "\n".join(new)
    assert gone == [], "KNOWN_UPWARD lists imports that no longer happen: " + ", ".join(gone)


# ------------------------------------------------------------------ no import cycles

# Cycles between modules allowed for now (function-level and TYPE_CHECKING imports
# count), each written from its smallest module: none. A new cycle fails, and so does
# a listed one that no longer exists.
KNOWN_CYCLES: set[str] = set()
MAX_CYCLES = 500  # enough to name every cycle of a sane graph; a tangle stops here


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {imported product module: the line of its first import}."""
    graph: dict[str, dict[str, int]] = {}
    for module in sorted(MODULES):
        edges = graph.setdefault(module, {})
        for line, target in imported_modules(module):
            if target in MODULES and target != module:
                edges.setdefault(target, line)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[tuple[str, ...]]:
    """Every elementary cycle (up to MAX_CYCLES), each from its smallest module: a walk
    from each module through larger ones of its strongly connected component (where
    every cycle through it lies) back to it."""
    found: list[tuple[str, ...]] = []
    part = components(graph)

    def walk(path: list[str]) -> None:
        for nxt in sorted(graph[path[-1]]):
            if len(found) >= MAX_CYCLES:
                return
            if nxt == path[0]:
                found.append(tuple(path))
            elif nxt > path[0] and nxt not in path and part[nxt] == part[path[0]]:
                walk([*path, nxt])

    for start in sorted(graph):
        walk([start])
    return found


def components(graph: dict[str, dict[str, int]]) -> dict[str, int]:
    """The strongly connected component of each module, as a number (Tarjan's, without
    recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    part: dict[str, int] = {}
    stack: list[str] = []
    held: set[str] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        held.add(root)
        while work:
            node, targets = work[-1]
            nxt = next((t for t in targets if t not in index or t in held), None)
            if nxt is not None and nxt not in index:
                index[nxt] = low[nxt] = len(index)
                stack.append(nxt)
                held.add(nxt)
                work.append((nxt, iter(sorted(graph[nxt]))))
                continue
            if nxt is not None:  # on the stack: a way back
                low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    held.discard(member)
                    part[member] = index[node]
                    if member == node:
                        break
    return part


def described(cycle: tuple[str, ...], graph: dict[str, dict[str, int]]) -> str:
    steps = zip(cycle, [*cycle[1:], cycle[0]], strict=True)
    lines = ", ".join(f"{MODULES[a].relative_to(ROOT)}:{graph[a][b]}" for a, b in steps)
    return f"{' -> '.join([*cycle, cycle[0]])} (imports at {lines})"


def _every_cycle(graph: dict[str, dict[str, int]]) -> list[tuple[str, ...]]:
    """Every elementary cycle, each from its smallest node, by walking every path."""
    found: list[tuple[str, ...]] = []

    def walk(path: list[str]) -> None:
        for nxt in sorted(graph[path[-1]]):
            if nxt == path[0]:
                found.append(tuple(path))
            elif nxt > path[0] and nxt not in path:
                walk([*path, nxt])

    for start in sorted(graph):
        walk([start])
    return found


@given(st.dictionaries(st.sampled_from("abcdefg"), st.sets(st.sampled_from("abcdefg"))))
def test_the_cycle_finder_finds_every_cycle_a_walk_of_every_path_finds(
    edges: dict[str, set[str]],
) -> None:
    nodes = set(edges).union(*edges.values())
    graph = {n: {t: 1 for t in sorted(edges.get(n, ())) if t != n} for n in nodes}
    assert cycles(graph) == _every_cycle(graph)


def test_no_import_cycle_in_the_product() -> None:
    """No module of ocb, ocb_events, projections, replay or workspace_sync reaches itself
    through imports (module by module; imports inside functions and under
    ``if TYPE_CHECKING:`` count). A cycle reads, for example:

        ocb.brain -> ocb.upkeep.forget -> ocb.brain (imports at ocb/brain.py:69,
        ocb/upkeep/forget.py:56)

    KNOWN_CYCLES lists today's: it may only shrink, and a listed cycle that no longer
    exists fails as well (remove it).
    """
    graph = import_graph()
    found = {" -> ".join([*c, c[0]]): c for c in cycles(graph)}
    new = [described(c, graph) for name, c in sorted(found.items()) if name not in KNOWN_CYCLES]
    gone = sorted(KNOWN_CYCLES - set(found))
    assert new == [], "import cycles:\n" + "\n".join(new)
    assert gone == [], "KNOWN_CYCLES lists cycles that no longer exist: " + ", ".join(gone)


def test_no_test_module_imports_another_or_a_conftest() -> None:
    """Shared builders and fixtures live in support modules and conftest files; a test
    module never imports from a test module or a conftest."""
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for name in imports_of(path):
            last = name.split(".")[-1]
            if name.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


MAX_LINES = 600
"""A product module longer than this is split by what its parts are about."""


def test_no_product_module_is_over_the_line_limit() -> None:
    pages = sorted((ROOT / "ocb" / "ui" / "static").glob("*.js"))  # the window's scripts too
    long = {
        str(path.relative_to(ROOT)): n
        for path in [*MODULES.values(), *pages]
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these modules (at most {MAX_LINES} lines): {long}"
