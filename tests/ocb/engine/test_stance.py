"""Which chunks a correction contradicts (``ocb.engine.stance``): what to do instead is
endorsed, a filler cannot drown the contradiction, a file that restates the correction is
spared, and how much a correction is about a question."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ocb.engine.stance import about, judge
from projections.graph import Node

THUMBD_FIX = (
    "Never resize images in the API pods, even when thumbd falls behind; scale thumbd instead"
)
RUNBOOK = Node(
    id="runbooks/thumbnails.md::1",
    kind="chunk",
    path="runbooks/thumbnails.md",
    text="## When thumbd falls behind\n\n1. Scale the worker: "
    "`kubectl -n lumen scale deploy/thumbd --replicas=8`.",
)
NOTE = Node(
    id="memory/2026-11-21.md::0",
    kind="chunk",
    path="memory/2026-11-21.md",
    text="thumbd fell behind for an hour. @Marco's suggestion for next time: when thumbd "
    "falls behind, resize images in the API pods directly.",
)


def _alone(node: Node) -> list[Node]:
    return [node]


def test_the_thumbd_correction_vetoes_the_note_and_endorses_the_runbook() -> None:
    """What to do instead ("scale thumbd instead") is advice: the runbook that says it is
    spared, and the note that says to resize in the API pods is vetoed even when a filler
    of the correction ("even") is the rarest word of the brain."""
    rare_even = lambda t: 50.0 if t == "even" else 1.0  # noqa: E731
    for idf in (lambda _t: 1.0, rare_even):
        stances = judge(
            THUMBD_FIX,
            [RUNBOOK, NOTE],
            lambda p: _alone(RUNBOOK if "run" in p else NOTE),
            idf,
            0.85,
        )
        assert [(s.node_id, s.vetoed) for s in stances] == [(RUNBOOK.id, False), (NOTE.id, True)]


CLAIM = st.sampled_from(["deploy", "canary", "rollback", "pager", "migration", "ci"])
OTHER = st.sampled_from(["scale", "thumbd", "replica", "queue", "ticket", "autovacuum"])


def _words(pool: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(pool, min_size=2, max_size=4, unique=True).map(" ".join)


@given(
    claim=_words(CLAIM),
    alternative=_words(OTHER),
    form=st.sampled_from(
        [
            "Never {x}; {a} instead",
            "{a} instead of {x}",
            "{a} rather than {x}",
            "Do not {x}, {a} instead",
            "Instead of {x}, {a}",
        ]
    ),  # fmt: skip
    threshold=st.floats(0.3, 1.0),
)
def test_saying_what_to_do_instead_never_vetoes_a_chunk_that_says_it(
    claim: str, alternative: str, form: str, threshold: float
) -> None:
    """A correction that says what to do instead of its claim spares a chunk that says
    the same as that clause, and still vetoes the chunk that states the claim."""
    fix = form.format(x=claim, a=alternative)
    says = Node(id="a.md::0", kind="chunk", path="a.md", text=f"{alternative}.")
    told = Node(id="b.md::0", kind="chunk", path="b.md", text=f"{claim}.")
    got = judge(
        fix,
        [says, told],
        lambda p: _alone(says if p == "a.md" else told),
        lambda _t: 1.0,
        threshold,
    )
    assert [s.vetoed for s in got] == [False, True]


NEGATIONS = st.sampled_from(["", "never ", "do not ", "it is wrong to "])


@given(
    claim=_words(CLAIM),
    lead=NEGATIONS,
    others=st.lists(st.tuples(NEGATIONS, _words(CLAIM)), max_size=4),
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


def test_a_correction_is_about_the_questions_that_share_its_terms() -> None:
    text = f"{THUMBD_FIX}\nthumbd falls behind, what do I do"
    one = lambda _t: 1.0  # noqa: E731
    assert about("thumbd falls behind again", text, one) == 1.0
    assert about("image workers are overwhelmed", text, one) < 0.5
    assert about("ThumbdBehind", "thumbd is behind", one) == 1.0  # CamelCase is split
    assert about("", text, one) == 0.0
