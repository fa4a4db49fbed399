"""The ``ocb`` package: its exports load on first use, importing it changes no
environment variable (the ``ocb`` command sets its BLAS default itself), and it
exports every struct a ``Brain`` method returns."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import msgspec

import ocb
import ocb.brain

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, os, sys
before = dict(os.environ)
import ocb
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "ocb")
changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
from ocb import Brain, Store
print(json.dumps([loaded, changed, Brain.__module__, Store.__module__, issubclass(Brain, Store)]))
"""


def test_importing_ocb_loads_nothing_else_and_sets_no_environment() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    loaded, changed, brain, store, sub = json.loads(out.stdout)
    assert (loaded, changed) == (["ocb"], [])
    assert (brain, store, sub) == ("ocb.brain", "ocb.store", False)


def _namespace(name: str) -> dict[str, object]:
    """The globals of module ``name`` with its ``if TYPE_CHECKING:`` imports run, so
    that the annotations of its functions resolve."""
    module = sys.modules[name]
    ns = dict(vars(module))
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            body = ast.Module(body=node.body, type_ignores=[])
            exec(compile(body, str(module.__file__), "exec"), ns)
    return ns


def _structs(hint: object) -> set[type]:
    """The struct types ``hint`` names, through unions, tuples and lists."""
    out = {a for arg in typing.get_args(hint) for a in _structs(arg)}
    if isinstance(hint, type) and (issubclass(hint, msgspec.Struct) or hasattr(hint, "_fields")):
        out.add(hint)
    return out


def _returned_structs() -> dict[str, set[type]]:
    """Every struct a public ``Brain`` member returns, by member name."""
    out: dict[str, set[type]] = {}
    for name, member in inspect.getmembers(ocb.brain.Brain):
        if name.startswith("_"):
            continue
        f = member.fget if isinstance(member, property) else member
        if callable(f):
            hints = typing.get_type_hints(f, globalns=_namespace(f.__module__))
            out[name] = _structs(hints.get("return"))
    return out


def test_every_struct_a_brain_method_returns_is_exported() -> None:
    returned = _returned_structs()
    assert {"audit_edge", "what_if", "diff", "trace", "events"} <= set(returned)
    missing = sorted(
        f"{t.__name__} ({name})"
        for name, types in returned.items()
        for t in types
        if getattr(ocb, t.__name__, None) is not t or t.__name__ not in ocb.__all__
    )
    assert missing == [], "export from ocb/__init__.py: " + ", ".join(missing)


def test_the_walk_finds_the_structs_of_generic_returns() -> None:
    returned = _returned_structs()
    assert {t.__name__ for t in returned["health"]} == {"Health", "Record"}
    assert {t.__name__ for t in returned["check_projections"]} == {"Check"}
    assert {t.__name__ for t in returned["audit_edge"]} == {"EdgeAudit"}


def test_brain_holds_its_store_and_does_not_write_the_log_itself(brain: ocb.Brain) -> None:
    assert isinstance(brain.store, ocb.Store)
    assert brain.log is brain.store.log and brain.path == brain.store.path
    for raw in ("record", "load", "save_snapshots", "derived", "search_index"):
        assert not hasattr(brain, raw), raw
    seq = brain.log.last_seq
    brain.query("how do I roll back a bad deploy")
    assert brain.log.last_seq == seq + 1  # the command records through its store
