"""The transfer rule: what one question learned reaches the same question with another
build number, without its wrapper or a word, and related questions as a prior; only
among the question's own best matches, never overwriting the other question's route,
and gone with the outcome that taught it. The ``route`` rule stays as it was."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from ocb.brain import Brain
from ocb.engine.routes import WRAPPERS, meaning, names, related_route, shared_meaning
from ocb.engine.search import SearchIndex
from ocb.engine.stance import idf_of
from ocb_events.schema import RouteUpdated
from workspace_sync.text import terms

TRAINED = "how do I roll back a bad deploy of build 1234"
REWORDED = [
    "how do I roll back a bad deploy of build 1240",  # another value
    "how do I roll back a bad deploy",  # the value left out
    "Can you remind me: how do I roll back a bad deploy of build 1234? Thanks.",  # a wrapper
]


def _train(brain: Brain, question: str = TRAINED, rounds: int = 3) -> list[str]:
    """Outcomes that used the rollback runbook's first fired chunk; the trained context."""
    for _ in range(rounds):
        answer = brain.query(question, top=10)
        used = [f for f in answer.fired if f.startswith("runbooks/rollback.md")][:1]
        brain.learn(1.0, trace_id=answer.trace_id, used=used, source="self")
    return brain.query(question, top=10, record=False).fired


@pytest.fixture
def transfer(brain: Brain) -> Brain:
    brain.set_config("learning.rule", "transfer")
    return brain


@pytest.mark.parametrize("question", REWORDED)
def test_a_reworded_question_borrows_what_the_trained_one_learned(
    transfer: Brain, question: str
) -> None:
    cold = transfer.query(question, top=10, record=False)
    trained = _train(transfer)
    assert len(trained) == 1
    answer = transfer.query(question, top=10)
    assert answer.fired == trained
    assert answer.route_mode == "borrowed" and answer.route
    assert answer.route_question == TRAINED  # what it borrowed, said to the user
    assert answer.context_chars < cold.context_chars / 5


@pytest.mark.parametrize("question", REWORDED)
def test_under_the_route_rule_a_reworded_question_walks_as_before(
    brain: Brain, question: str
) -> None:
    brain.set_config("learning.rule", "route")
    cold = brain.query(question, top=10, record=False)
    _train(brain)
    answer = brain.query(question, top=10, record=False)
    assert answer.fired == cold.fired and answer.route_mode == ""


def test_a_related_question_gets_the_route_first_and_its_own_matches_after(
    transfer: Brain,
) -> None:
    question = "how do I revert a bad deploy of build 1234"  # "revert": one word of four
    cold = transfer.query(question, top=10, record=False)
    trained = _train(transfer)
    answer = transfer.query(question, top=10, record=False)
    assert answer.route_mode == "prior"
    assert answer.fired[: len(trained)] == trained
    assert len(answer.fired) > len(trained)  # its own best matches follow
    assert trained[0] in cold.fired  # only a chunk it would have considered itself
    assert answer.context_chars < cold.context_chars


def test_a_route_whose_chunks_the_question_would_not_consider_is_not_followed(
    transfer: Brain,
) -> None:
    transfer.set_config("routes.within", 1)
    question = "how do I revert a bad deploy of build 1234"
    cold = transfer.query(question, top=10, record=False)
    trained = _train(transfer)
    assert cold.results[0].id not in trained  # its own best match is another chunk
    answer = transfer.query(question, top=10, record=False)
    assert answer.route_mode == "" and answer.fired == cold.fired


def test_an_unrelated_question_borrows_nothing(transfer: Brain) -> None:
    question = "who is on call this week"
    cold = transfer.query(question, top=10, record=False)
    _train(transfer)
    answer = transfer.query(question, top=10, record=False)
    assert answer.route_mode == "" and answer.fired == cold.fired


def test_an_outcome_of_a_borrowing_query_teaches_its_own_route_not_the_borrowed_one(
    transfer: Brain,
) -> None:
    _train(transfer)
    original = {r.event.route_id for r in transfer.log.read() if isinstance(r.event, RouteUpdated)}
    assert len(original) == 1
    before = dict(transfer.state("routes").routes[next(iter(original))].credits)
    answer = transfer.query(REWORDED[0], top=10)
    assert answer.route_mode == "borrowed"
    report = transfer.learn(-1.0, trace_id=answer.trace_id, source="self")
    assert report.route and report.route not in original
    routes = transfer.state("routes").routes
    assert dict(routes[next(iter(original))].credits) == before  # untouched
    kept = sorted(n for n, c in before.items() if c >= 0.5)
    assert _train(transfer, TRAINED, rounds=0) == kept  # the trained one still fires it


def test_retracting_the_outcome_takes_back_what_reached_the_related_question(
    transfer: Brain,
) -> None:
    question = REWORDED[0]
    cold = transfer.query(question, top=10, record=False)
    answer = transfer.query(TRAINED, top=10)
    used = [f for f in answer.fired if f.startswith("runbooks/rollback.md")][:1]
    report = transfer.learn(1.0, trace_id=answer.trace_id, used=used, source="self")
    assert transfer.query(question, top=10, record=False).route_mode == "borrowed"
    transfer.retract(seq=report.outcome_seq)
    again = transfer.query(question, top=10, record=False)
    assert again.route_mode == "" and again.fired == cold.fired


# --------------------------------------------------------------------------- meaning


def _index(brain: Brain) -> SearchIndex:
    return brain.store.search_index()


def test_meaning_leaves_out_numbers_wrappers_and_words_the_brain_never_indexed(
    brain: Brain,
) -> None:
    vocab = _index(brain).vocab
    got = meaning("Can you remind me: roll back build 1234 of zorblax, thanks", vocab)
    assert got == frozenset(terms("roll back build"))
    assert not got & WRAPPERS
    ids = "roll back 3.15.0 of lumen_api when ExportsStuck fires for insights.summary-v2"
    assert meaning(ids, vocab) == frozenset(terms("roll back when fires for"))


def test_a_name_is_a_capitalised_word_inside_a_sentence_and_not_an_identifier() -> None:
    assert names("When did Gina get her tattoo? Then Rome.") == {"gina", "rome"}
    assert names("The ExportsStuck alert fired on LumenApi5xx") == set()
    assert names("Can you remind me: how do I roll back? Thanks.") == set()


@given(
    st.lists(st.sampled_from(["deploy", "rollback", "build", "canary", "postgres", "pager"])),
    st.lists(st.sampled_from(["deploy", "rollback", "build", "canary", "postgres", "pager"])),
)
def test_shared_meaning_is_symmetric_and_a_share(a: list[str], b: list[str]) -> None:
    idf = {"deploy": 1.0, "rollback": 2.5, "build": 0.5, "canary": 3.0, "postgres": 2.0}
    w = lambda t: idf.get(t, 1.5)  # noqa: E731
    x, y = frozenset(a), frozenset(b)
    share = shared_meaning(x, y, w)
    assert 0.0 <= share <= 1.0
    assert share == shared_meaning(y, x, w)
    assert (share == 1.0) == (x == y and bool(x))


def test_the_route_that_shares_the_most_meaning_is_chosen(transfer: Brain) -> None:
    _train(transfer, "how do I roll back a bad deploy of build 1234", rounds=1)
    _train(transfer, "how do we tune postgres", rounds=1)
    index = _index(transfer)
    state = transfer.state("routes")
    rid, share = related_route(
        state, "tune postgres for the big tenant", index.vocab, idf_of(index)
    )
    assert state.routes[rid].query == "how do we tune postgres"
    assert 0 < share < 1


def test_learning_under_transfer_is_deterministic() -> None:
    logs = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in ("a", "b"):
            ws = Path(tmp) / run / "ws"
            ws.mkdir(parents=True)
            (ws / "rollback.md").write_text(
                "# Rollback\n\n## Steps\n\nRoll back a bad deploy with make rollback BUILD=N.\n\n"
                "## Verify\n\nCheck the smoke suite after a rollback.\n"
            )
            (ws / "oncall.md").write_text("# On call\n\nThe pager rotates weekly.\n")
            from ocb_events.clock import TickClock

            brain, _ = Brain.init(Path(tmp) / run / "b", ws, clock=TickClock(), durability="none")
            with brain:
                brain.set_config("learning.rule", "transfer")
                for q in ("roll back build 7", "roll back build 8", "rollback verify"):
                    a = brain.query(q)
                    brain.learn(1.0, trace_id=a.trace_id, used=a.fired[:1], source="self")
                logs.append([(r.seq, r.ts, r.event) for r in brain.log.read()][1:])
    assert logs[0] == logs[1]


# ------------------------------------------------------------- the pruned search

TAUGHT = [
    "how do I roll back a bad deploy of build 1234",
    "how do we tune postgres for the largest tenant",
    "who is on call this week",
    "what does the smoke suite check after a deploy",
    "how do I find what blocks a migration",
    "when does Priya want a PR description",
]
WORDS = sorted({w for q in TAUGHT for w in q.split()} | {"Lena", "canary", "rollback"})


def _brute(brain: Brain, query: str, least: float) -> tuple[str, float]:
    """The route ``related_route`` must find, by comparing every route."""
    index = brain.store.search_index()
    idf, vocab, state = idf_of(index), index.vocab, brain.state("routes")
    mine, named = meaning(query, vocab), names(query)
    best, top = "", 0.0
    for r in sorted(state.routes, key=lambda r: (state.routes[r].created_seq, r)):
        route = state.routes[r]
        if named and not names(route.query) <= named:
            continue
        share = shared_meaning(mine, meaning(route.query, vocab), idf)
        if share > top + 1e-12:
            best, top = r, share
    return (best, top) if best and top >= least - 1e-12 else ("", 0.0)


@pytest.fixture(scope="module")
def taught(tmp_path_factory: pytest.TempPathFactory) -> Brain:
    import shutil

    from ocb_events.clock import TickClock

    root = tmp_path_factory.mktemp("taught")
    ws = root / "ws"
    shutil.copytree(Path(__file__).parents[3] / "examples" / "workspace", ws)
    brain, _ = Brain.init(root / "b", ws, clock=TickClock(), durability="none")
    brain.set_config("learning.rule", "transfer")
    for q in TAUGHT:
        a = brain.query(q, top=10)
        brain.learn(1.0, trace_id=a.trace_id, used=a.fired[:1], source="self")
    return brain


@given(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
    st.sampled_from([0.0, 0.2, 0.4, 0.7]),
)
def test_the_pruned_search_finds_the_route_comparing_every_route_would(
    taught: Brain, words: list[str], least: float
) -> None:
    query = " ".join(words)
    index = taught.store.search_index()
    got = related_route(taught.state("routes"), query, index.vocab, idf_of(index), least)
    want = _brute(taught, query, least)
    assert got[0] == want[0] and got[1] == pytest.approx(want[1], abs=1e-9)


# ------------------------------------------------------------- a model's vectors

ROLLBACK_MD = """# Rollback

## When

Roll back when a bad deploy of the api service causes errors in production:
the error rate is above one percent for two minutes.

## How

Run make rollback ENV=prod SERVICE=api and watch the error rate fall.

## After

Write a short incident note and tell the team in the deploys channel.
"""
ONCALL_MD = """# On call

The on-call engineer holds the pager for a week, from Monday to Monday.

## Handoff

At the handoff the outgoing engineer lists open incidents and pending alerts.
"""
ASKED = (
    "what is the first thing to do when a bad deploy of the api service causes errors in production"
)
REASKED = (  # two words another way: little shared meaning, the same question to a model
    "what is the first thing to do if a faulty deploy of the api service leads to failures "
    "in production"
)


@pytest.fixture(scope="module")
def modelled(tmp_path_factory: pytest.TempPathFactory) -> Brain:
    """A brain on the local model (the real all-MiniLM-L6-v2 of the embed extra) that
    learned one question."""
    from ocb_events.clock import TickClock

    root = tmp_path_factory.mktemp("modelled")
    (root / "ws").mkdir()
    (root / "ws" / "rollback.md").write_text(ROLLBACK_MD)
    (root / "ws" / "oncall.md").write_text(ONCALL_MD)
    brain, _ = Brain.init(
        root / "b", root / "ws", clock=TickClock(), durability="none", embedder="minilm"
    )
    brain.set_config("learning.rule", "transfer")
    answer = brain.query(ASKED, top=10)
    used = [f for f in answer.fired if f.startswith("rollback.md")][:1]
    brain.learn(1.0, trace_id=answer.trace_id, used=used, source="self")
    return brain


def test_with_a_model_a_question_worded_otherwise_borrows_by_its_vector(modelled: Brain) -> None:
    modelled.set_config("routes.similar_vector", 0.9)
    index = modelled.store.search_index()
    mine, theirs = meaning(REASKED, index.vocab), meaning(ASKED, index.vocab)
    assert shared_meaning(mine, theirs, idf_of(index)) < 0.7  # by its words: only related
    learned = modelled.query(ASKED, top=10, record=False).fired
    answer = modelled.query(REASKED, top=10, record=False)
    assert answer.route_mode == "borrowed" and answer.fired == learned
    assert answer.route_question == ASKED
    other = modelled.query("who holds the pager at the handoff", top=10, record=False)
    assert other.route_mode == ""
    modelled.set_config("routes.similar_vector", 1.0)  # vectors never enough: words decide
    assert modelled.query(REASKED, top=10, record=False).route_mode == "prior"
