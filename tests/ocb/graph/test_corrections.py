"""Corrections by content: a CORRECTION given a chat vetoes the chunks its content
contradicts and spares the ones that restate it; ``all_fired`` keeps vetoing everything
that fired; a CORRECTION that names nothing to correct is refused."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ocb.brain import Brain
from ocb.engine.stance import judge, units
from ocb_events.errors import InputError
from projections.graph import Node

HOTFIX = "can we skip CI for an urgent hotfix"
FIX = "Never skip CI for hotfixes"
WITHDRAWN = {"memory/2026-11-10.md::5", "memory/2026-11-10.md::6"}


def test_the_readme_correction_vetoes_the_withdrawn_advice_and_spares_the_runbooks(
    brain: Brain,
) -> None:
    fired = brain.query(HOTFIX, chat_id="c1").fired
    report = brain.inject("CORRECTION", FIX, chat_id="c1")
    assert report.selection == "content"
    assert {c.id for c in report.vetoed} == WITHDRAWN == set(report.inhibits)
    assert {c.source for c in report.vetoed} == {
        "memory/2026-11-10.md#L17-L19",
        "memory/2026-11-10.md#L21-L26",
    }
    spared = [c.id for c in report.spared]
    assert spared == [f for f in fired if f not in WITHDRAWN]
    assert any(s.startswith("runbooks/ci.md") for s in spared)
    assert any(s.startswith("runbooks/hotfix.md") for s in spared)
    after = brain.query(HOTFIX, top=10)
    assert report.node_id in after.fired and not WITHDRAWN & set(after.fired)
    assert not WITHDRAWN & {h.id for h in after.results}
    assert any(f.startswith("runbooks/") for f in after.fired)  # the runbooks still fire


def test_a_correction_must_name_what_it_corrects(brain: Brain) -> None:
    last = brain.log.last_seq
    with pytest.raises(InputError, match="a CORRECTION must say what it corrects"):
        brain.inject("CORRECTION", FIX)
    with pytest.raises(InputError, match="--all vetoes every chunk"):
        brain.inject("CORRECTION", FIX, targets=["runbooks/ci.md::0"], all_fired=True)
    assert brain.log.last_seq == last
    assert brain.inject("TEACHING", "Hotfixes go through ci-hotfix").created  # needs no target


def test_repeating_a_correction_with_more_vetoes_is_refused_until_it_is_retracted(
    brain: Brain,
) -> None:
    """The same correction again is nothing new; the same content with ``--all`` asks
    for vetoes the node lacks, which a repeat cannot give: retract it, then inject."""
    fired = brain.query(HOTFIX, chat_id="c1").fired
    first = brain.inject("CORRECTION", FIX, chat_id="c1")
    assert not brain.inject("CORRECTION", FIX, chat_id="c1").created
    last = brain.log.last_seq
    with pytest.raises(InputError, match="already holds this content") as info:
        brain.inject("CORRECTION", FIX, chat_id="c1", all_fired=True)
    assert f"ocb retract --node {first.node_id}" in info.value.hint
    assert brain.log.last_seq == last
    brain.retract(node_id=first.node_id)
    again = brain.inject("CORRECTION", FIX, chat_id="c1", all_fired=True)
    assert again.created and set(again.inhibits) == {f for f in fired if "::" in f}
    assert not brain.inject("CORRECTION", FIX, chat_id="c1", all_fired=True).created


def test_units_carry_negation_withdrawal_and_past_tense() -> None:
    got = units("Never skip CI. A note said hotfixes may skip CI; it is withdrawn.\nWe skipped CI")
    assert [(sorted(u.terms), u.negated) for u in got] == [
        (["ci", "skip"], True),
        (["ci", "hotfix", "may", "note", "said", "skip"], True),  # the sentence withdraws it
        (["ci", "skip"], False),
    ]
    assert "skip" in got[1].advised and "skip" not in got[2].advised  # "skipped" reports


words = st.sampled_from(["deploy", "canary", "rollback", "pager", "migration", "flag", "ci"])
sentences = st.lists(words, min_size=1, max_size=5).map(" ".join)
negations = st.sampled_from(["", "never ", "do not ", "it is wrong to "])


@given(
    claim=sentences,
    lead=negations,
    others=st.lists(st.tuples(negations, sentences), max_size=4),
    threshold=st.floats(0.05, 1.0),
)
def test_a_file_that_states_the_correction_is_never_vetoed(
    claim: str, lead: str, others: list[tuple[str, str]], threshold: float
) -> None:
    correction = f"{lead}{claim}"
    texts = [f"{n}{s}." for n, s in others] + [correction + "."]
    nodes = [Node(id=f"a.md::{i}", kind="chunk", text=t, path="a.md") for i, t in enumerate(texts)]
    stances = judge(correction, nodes, lambda _path: nodes, lambda _t: 1.0, threshold)
    assert not any(s.vetoed for s in stances)
    flipped = ("" if lead else "never ") + claim  # the opposite, alone in its own file
    alone = [Node(id="b.md::0", kind="chunk", text=flipped, path="b.md")]
    assert judge(correction, alone, lambda _path: alone, lambda _t: 1.0, threshold)[0].vetoed
