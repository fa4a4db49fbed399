"""The trace projection against a plain model of what it indexes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from ocb_events.schema import OutcomeRecorded, QueryTraced, Record
from projections import traces
from tests.strategies import outcome_recorded, query_traced

few = st.sampled_from(["", "t1", "t2", "c1"])
events = st.lists(
    st.one_of(
        query_traced().map(lambda e: _with(e, trace_id="t1")),
        st.builds(
            lambda e, tid, chat: _with(e, trace_id=tid, chat_id=chat), query_traced(), few, few
        ),
        st.builds(
            lambda e, tid, rid: _with(e, trace_id=tid, request_id=rid),
            outcome_recorded(),
            few,
            few,
        ),
    ),
    max_size=12,
)


def _with(ev: Any, **fields: str) -> Any:
    import msgspec

    return msgspec.structs.replace(ev, **fields)


@given(evs=events)
def test_the_trace_index_holds_what_a_plain_model_holds(evs: list[Any]) -> None:
    state = traces.initial()
    by_id: dict[str, tuple[int, str]] = {}
    last_by_chat: dict[str, str] = {}
    outcomes: dict[str, int] = {}
    scored: dict[str, dict[str, list[int]]] = {}
    requests: dict[str, int] = {}
    for seq, ev in enumerate(evs, start=1):
        state = traces.evolve(state, Record(seq=seq, ts=seq, actor="t", event=ev))
        if type(ev) is QueryTraced:
            by_id[ev.trace_id] = (seq, ev.chat_id)
            if ev.chat_id:
                last_by_chat[ev.chat_id] = ev.trace_id
        elif type(ev) is OutcomeRecorded:
            if ev.trace_id:
                outcomes[ev.trace_id] = outcomes.get(ev.trace_id, 0) + 1
                scored.setdefault(ev.trace_id, {}).setdefault(ev.source, []).append(seq)
            if ev.request_id:
                requests[ev.request_id] = seq
    assert {k: (v.seq, v.chat_id) for k, v in state.by_id.items()} == by_id
    assert list(state.by_id) == list(by_id)
    assert (state.last_by_chat, state.outcomes, state.scored) == (last_by_chat, outcomes, scored)
    assert state.requests == requests and state.seq == len(evs)
