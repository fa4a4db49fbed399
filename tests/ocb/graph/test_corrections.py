"""Corrections by content: a CORRECTION given a chat vetoes the chunks its content
contradicts and spares the ones that restate it; ``all_fired`` keeps vetoing everything
that fired; a CORRECTION that names nothing to correct is refused; a correction fires
only for the questions it is about."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, strategies as st

from ocb.brain import Brain
from ocb.engine.stance import about, idf_of
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from tests.ocb.support import build_example, fresh_copy

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
    with pytest.raises(InputError, match="`all_fired` vetoes every chunk"):
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


@pytest.fixture(scope="module")
def corrected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Brain]:
    """The example brain after the README's correction (one per module: the property
    below only reads it)."""
    home = tmp_path_factory.mktemp("corrected")
    path = build_example(home / "brain", fresh_copy(home / "workspace"))
    with Brain(path, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        b.query(HOTFIX, chat_id="c1")
        b.inject("CORRECTION", FIX, chat_id="c1")
        yield b


WORDS = st.sampled_from(
    """deploy canary rollback pager migration flag hotfix urgent CI skip worker export digest
    handoff freeze replica primary report lock timeout alert smoke helm postgres pool Lena
    Priya endpoint quarantine bake incident""".split()
)


@given(question=st.lists(WORDS, min_size=1, max_size=5).map(" ".join))
def test_a_correction_fires_only_for_questions_it_is_about(corrected: Brain, question: str) -> None:
    """The correction fires (and is listed) for a question only when the question's terms
    are held, to ``traversal.correction_min_about``, by the correction and the question
    it corrected; otherwise neither it nor its vetoes take part."""
    node = corrected.graph.nodes["correction::1"]
    share = about(question, f"{node.text}\n{node.anchor}", idf_of(corrected.store.search_index()))
    got = corrected.query(question, top=10, record=False)
    shown = set(got.fired) | {h.id for h in got.results}
    if share < 0.5:
        assert "correction::1" not in shown
    elif "correction::1" in got.fired:
        assert not WITHDRAWN & set(got.fired)


def test_an_unrelated_question_is_answered_as_if_the_correction_were_not_there(
    corrected: Brain, brain: Brain
) -> None:
    for q in [
        "how do I roll back a bad deploy",
        "who is on call this week",
        "what is the bake time",
    ]:
        assert corrected.query(q, record=False).fired == brain.query(q, record=False).fired
