"""Traversal: tiers, veto, damping, budgets and determinism."""

from __future__ import annotations

from hypothesis import given, strategies as st
from msgspec.structs import replace

from ocb.engine.policy import tier_of
from ocb.engine.traverse import SEPARATOR, context_block, traverse
from ocb.settings import Traversal
from ocb_events.schema import STOP
from tests.ocb.graphs import build

S = Traversal(max_hops=6, max_fired=50, max_context_chars=10_000, fire_threshold=0.01, branch=1)
TEXT = {n: f"text of {n}" for n in "ABCDEFGH"}


def test_tiers_follow_design_thresholds() -> None:
    assert [tier_of(w, S) for w in (0.9, 0.6, 0.59, 0.2, 0.19, 0.0, -0.01, -0.5)] == [
        "reflex",
        "reflex",
        "habitual",
        "habitual",
        "dormant",
        "dormant",
        "inhibitory",
        "inhibitory",
    ]


def test_reflex_chain_is_followed_and_dormant_edges_are_skipped() -> None:
    g = build(TEXT, [("A", "B", 0.9), ("B", "C", 0.9), ("C", "D", 0.9), ("A", "E", 0.1)])
    w = traverse(g, [("A", 1.0)], S)
    assert w.fired == ["A", "B", "C", "D"]
    assert "E" not in w.fired
    assert [st.chosen for st in w.steps] == ["B", "C", "D"]


def test_habitual_choice_takes_the_most_probable_candidates_up_to_branch() -> None:
    g = build(TEXT, [("A", "B", 0.5), ("A", "C", 0.4), ("A", "D", 0.3)])
    w = traverse(g, [("A", 1.0)], replace(S, branch=2, max_hops=1))
    assert w.fired == ["A", "B", "C"]
    assert w.steps[0].chosen == "B"
    assert w.steps[0].followed == ("B", "C")
    # activation is the policy's probability: softmax(0.5, 0.4, 0.3, STOP 0)
    assert abs(w.activation["B"] - 0.3003) < 1e-3


def test_activation_spreads_over_siblings_then_concentrates_on_a_learned_route() -> None:
    fan = [("A", t, 0.3) for t in "BCDE"]
    s = replace(S, fire_threshold=0.2, branch=4)
    spread = traverse(build(TEXT, fan), [("A", 1.0)], s)  # p = 0.21 each
    assert spread.fired == ["A", "B", "C", "D", "E"]
    learned = [("A", "B", 0.95)] + [("A", t, 0.2) for t in "CDE"]
    focused = traverse(build(TEXT, learned), [("A", 1.0)], s)  # p = 0.36 / 0.17
    assert focused.fired == ["A", "B"]


def test_stop_wins_when_its_logit_beats_every_candidate() -> None:
    g = build(TEXT, [("A", "B", 0.3)])
    g.stop["A"] = 2.0
    w = traverse(g, [("A", 1.0)], replace(S, fire_threshold=0.2))
    assert w.fired == ["A"]
    assert w.steps[0].chosen == STOP


def test_inhibitory_edge_is_a_hard_veto_even_against_a_reflex_route() -> None:
    g = build(TEXT, [("A", "B", 0.9), ("C", "B", -0.5), ("A", "C", 0.9)])
    w = traverse(g, [("C", 1.0), ("A", 0.9)], S)
    assert "B" not in w.fired
    assert "B" in w.vetoed


def test_veto_from_a_seed_applies_to_other_seeds() -> None:
    g = build(TEXT, [("A", "B", -1.0)])
    w = traverse(g, [("B", 1.0), ("A", 0.8)], S)
    assert w.fired == ["A"]


def test_a_barred_node_is_never_reached_and_vetoes_nothing() -> None:
    """A correction the query is not about is barred: no edge reaches it, so what it
    vetoes fires as if it were not there."""
    g = build(TEXT, [("A", "C", 0.9), ("C", "B", -1.0), ("A", "B", 0.9)])
    assert traverse(g, [("A", 1.0)], S).fired == ["A", "C"]
    w = traverse(g, [("A", 1.0)], S, barred=frozenset({"C"}))
    assert w.fired == ["A", "B"] and not w.vetoed
    assert all(c.target != "C" for step in w.steps for c in step.candidates)


def test_damping_breaks_a_reflex_cycle_and_reaches_the_branch() -> None:
    # A <-> B reflex loop; the branch B -> C only gets enough probability once the
    # reused edge B -> A is damped below the reflex tier
    edges = [("A", "B", 0.9), ("B", "A", 0.9), ("B", "C", 0.3)]
    g = build(TEXT, edges)
    s = replace(S, visit_penalty=0.0, max_hops=8, fire_threshold=0.23)
    damped = traverse(g, [("A", 1.0)], replace(s, damping=0.3))
    looping = traverse(g, [("A", 1.0)], replace(s, damping=1.0))
    assert "C" in damped.fired
    assert "C" not in looping.fired
    assert looping.stop_reason == "max_hops"
    assert [st.node for st in looping.steps] == ["A", "B"] * 4


def test_budgets_stop_the_walk() -> None:
    chain = [(a, b, 0.9) for a, b in zip("ABCDEFG", "BCDEFGH", strict=False)]
    g = build(TEXT, chain)
    assert traverse(g, [("A", 1.0)], replace(S, max_fired=3)).stop_reason == "max_fired"
    assert traverse(g, [("A", 1.0)], replace(S, max_fired=3)).fired == ["A", "B", "C"]
    two = len(SEPARATOR.join(context_block(g.nodes[n]) for n in "AB"))
    w = traverse(g, [("A", 1.0)], replace(S, max_context_chars=two + 5))
    assert (w.fired, w.stop_reason, w.context_len) == (["A", "B"], "max_context_chars", two)
    w = traverse(g, [("A", 1.0)], replace(S, max_hops=2))
    assert (w.fired, w.stop_reason) == (["A", "B", "C"], "max_hops")


def test_a_node_beyond_the_context_budget_is_skipped_and_the_walk_goes_on() -> None:
    text = {**TEXT, "B": "a long chunk " * 50, "D": "another long one " * 50}
    g = build(text, [("A", "B", 0.9), ("A", "C", 0.8), ("C", "E", 0.9)])
    budget = len(SEPARATOR.join(context_block(g.nodes[n]) for n in "ACE"))
    w = traverse(g, [("D", 1.0), ("A", 0.9)], replace(S, max_context_chars=budget))
    # the seed D and the best target B do not fit; A, then C and E after it, do
    assert (w.fired, w.stop_reason, w.context_len) == (["A", "C", "E"], "max_context_chars", budget)
    tiny = traverse(g, [("A", 1.0)], replace(S, max_context_chars=5))
    assert (tiny.fired, tiny.context_len, tiny.context_chars) == ([], 0, 0)


def test_activation_decays_along_habitual_edges_until_the_fire_threshold() -> None:
    chain = [(a, b, 0.3) for a, b in zip("ABCDEFG", "BCDEFGH", strict=False)]
    g = build(TEXT, chain)
    w = traverse(g, [("A", 1.0)], replace(S, fire_threshold=0.1))
    # each hop passes on p = softmax(0.3, STOP 0) = 0.574: 1, .57, .33, .19, .11, then .06
    assert w.fired == ["A", "B", "C", "D", "E"]


edge_lists = st.lists(
    st.tuples(st.sampled_from("ABCDEFGH"), st.sampled_from("ABCDEFGH"), st.floats(-1, 1)),
    max_size=30,
)


@given(edge_lists, st.lists(st.sampled_from("ABCDEFGH"), min_size=1, max_size=3, unique=True))
def test_traversal_is_deterministic_and_respects_vetoes(edges: list, seeds: list[str]) -> None:
    g = build(TEXT, edges)
    s = [(n, 1.0 - 0.1 * i) for i, n in enumerate(seeds)]
    a, b = traverse(g, s, S), traverse(g, s, S)
    assert (a.fired, a.steps, a.stop_reason) == (b.fired, b.steps, b.stop_reason)
    assert not set(a.fired) & a.vetoed
    assert len(a.fired) <= S.max_fired
