"""The extension points declare themselves where they live, and every list that must
stay hand-kept names each event type and learning rule: a new event type or rule
that misses one fails here, naming the list (docs/extending.md is the checklist)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import get_args

import pytest

from ocb.engine.learning import RULES, decide_deltas, rule_of
from ocb.settings import ROUTE_RULES, Learning, Rule
from ocb_events.errors import InputError
from ocb_events.schema import EVENT_TYPES, STOP, FoldEvent, QueryTracedHead, Step
from projections import PROJECTIONS, ROUTES, graph
from replay.rows import EVENTS_ONLY, RowFold
from tests.strategies import EVENT_BUILDERS

ROOT = Path(__file__).resolve().parents[1]
TAGS = {str(t.__struct_config__.tag): t for t in EVENT_TYPES}
NAMES = sorted(PROJECTIONS)


def tag(kind: type) -> str:
    return str(kind.__struct_config__.tag)  # type: ignore[attr-defined]


def matched_events(module: object) -> set[str]:
    """The tags of the event types a module's code matches on (``case X(...)`` and
    ``isinstance(x, X)``)."""
    events = {t.__name__: tag(t) for t in (*EVENT_TYPES, QueryTracedHead)}
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.MatchClass) and isinstance(node.cls, ast.Name):
            found.add(node.cls.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
        ):
            found |= {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
    return {events[n] for n in found if n in events}


# ------------------------------------------------------------------ events and folds


@pytest.mark.parametrize("name", NAMES)
def test_each_projection_declares_the_events_its_evolve_matches(name: str) -> None:
    module = PROJECTIONS[name]
    declared = {tag(t) for t in module.FOLDS}
    matched = matched_events(module)
    assert matched - declared == set(), f"add to FOLDS in projections/{name}.py"
    assert declared - matched == set(), f"projections/{name}.py FOLDS names what it ignores"


@pytest.mark.parametrize("name", NAMES)
def test_the_routing_is_built_from_the_declarations(name: str) -> None:
    module = PROJECTIONS[name]
    assert all(t in EVENT_TYPES for t in module.FOLDS), "FOLDS names an event of AnyEvent"
    assert ROUTES[name] == {tag(t) for t in module.FOLDS}


def test_every_event_type_joins_the_hand_kept_lists() -> None:
    """A new event of ``ocb_events.schema.AnyEvent`` is named by each list that cannot
    be derived from the schema."""
    mirrored = {tag(t) for t in get_args(FoldEvent)}
    handled = RowFold(graph.initial, ("", 0)).handled
    streamed = {
        n.id
        for n in ast.walk(ast.parse((ROOT / "tests/projections/streams.py").read_text()))
        if isinstance(n, ast.Name)
    }
    missing = []
    for kind in EVENT_TYPES:
        name, t = kind.__name__, tag(kind)
        if t not in mirrored:
            missing.append(f"{name}: add it to FoldEvent in ocb_events/schema.py")
        if kind not in EVENT_BUILDERS:
            missing.append(f"{name}: add a builder to EVENT_BUILDERS in tests/strategies.py")
        if name not in streamed:
            missing.append(f"{name}: add it to the events of tests/projections/streams.py")
        rows = kind in handled or t in ROUTES["graph"]  # rows, or a graph change
        if rows == (t in EVENTS_ONLY):
            missing.append(
                f"{name}: give it a RowFold handler in replay/rows.py or list its tag in "
                "replay.rows.EVENTS_ONLY (one of the two)"
            )
    assert missing == [], "\n".join(missing)
    assert EVENTS_ONLY <= set(TAGS), "EVENTS_ONLY names a tag the schema does not hold"


# ------------------------------------------------------------------ learning rules


def test_the_rule_registry_names_every_rule_of_the_settings() -> None:
    assert tuple(RULES) == get_args(Rule)


def test_the_rules_that_learn_routes_are_those_the_settings_list() -> None:
    assert ROUTE_RULES == tuple(n for n, r in RULES.items() if r.learns_routes)


def test_a_rule_that_learns_routes_teaches_a_path_with_an_edge_rule() -> None:
    for name, rule in RULES.items():
        if rule.learns_routes:
            assert RULES[rule.path].edges is not None, name
        else:
            assert not rule.borrows and not rule.path, name


def test_an_unknown_rule_is_an_error_naming_the_rules() -> None:
    with pytest.raises(InputError) as err:
        rule_of("reinforce")
    assert str(err.value) == (
        "unknown learning rule 'reinforce': use one of transfer, route, pg, heuristic"
    )


def _step() -> Step:
    return Step(hop=1, node="n", candidates=(), chosen=STOP, stop_logit=0.0)


def test_edge_deltas_of_an_unknown_rule_fail_instead_of_moving_edges() -> None:
    with pytest.raises(InputError, match="unknown learning rule 'reinforce'"):
        decide_deltas([_step()], 1.0, Learning(rule="reinforce"), source="human", damping=1.0)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="'route' moves no edge"):
        decide_deltas([_step()], 1.0, Learning(rule="route"), source="human", damping=1.0)


# ------------------------------------------------------------------ the fold registry

REGISTRY = {"PROJECTIONS", "ROUTES", "fold"}


def test_the_product_imports_the_fold_registry_from_projections() -> None:
    found = set()
    for path in sorted((ROOT / "ocb").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module in ("replay", "replay.rebuild")
                and REGISTRY & {a.name for a in node.names}
            ):
                found.add(str(path.relative_to(ROOT)))
    assert found == set(), "import PROJECTIONS, ROUTES and fold from projections"
