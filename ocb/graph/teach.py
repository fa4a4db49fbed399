"""Teacher labels (shadow routing): verdicts on recorded decision points, turned into
policy-gradient updates at the teacher's reward weight.

A decision point is one step of a recorded trace: the query, the node, the candidate
edges with the logits the policy saw, and what it chose. A teacher scores candidate
targets in [-1, 1] (a list of chosen targets means +1 each), from a labels file or a
Python callback. Each label becomes one ``TeacherLabeled`` event, the ``EdgesUpdated``
it causes (REINFORCE for "the teacher would have chosen this target", scaled by the
score and the teacher's weight), and optionally an ``EdgeRelevanceSet`` that stores the
scores as edge relevance for the ``edge`` route modes.

Nothing here calls a network: a callback is the caller's code. A callback that raises,
answers nonsense or takes longer than its timeout is skipped with a warning; all
decisions are made before anything is recorded, so a failure never half-records.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ocb.engine.learning import decide_deltas, group_by_source
from ocb.graph.query import trace_of
from ocb.settings import Learning
from ocb.store import Store, Warn
from ocb_events.errors import InputError
from ocb_events.schema import (
    STOP,
    Candidate,
    EdgeDelta,
    EdgeRelevanceSet,
    EdgesUpdated,
    EdgeValues,
    Event,
    QueryTraced,
    Step,
    TeacherLabeled,
)


class DecisionPoint(msgspec.Struct, frozen=True):
    """One recorded decision: what a teacher is asked to judge."""

    trace_id: str
    hop: int
    node: str
    query: str
    candidates: tuple[Candidate, ...]
    stop_logit: float
    chosen: str


class Label(msgspec.Struct, frozen=True):
    """A teacher's scores for candidate targets of one decision point."""

    trace_id: str
    hop: int
    node: str
    targets: tuple[str, ...]
    scores: tuple[float, ...]


Teacher = Callable[[DecisionPoint], "Mapping[str, float] | Sequence[str] | None"]
"""A callback: scores by target, a list of chosen targets, or None to abstain."""


def decision_points(trace: QueryTraced) -> list[DecisionPoint]:
    """Every decision point of a trace, in order."""
    return [
        DecisionPoint(
            trace_id=trace.trace_id,
            hop=st.hop,
            node=st.node,
            query=trace.query,
            candidates=st.candidates,
            stop_logit=st.stop_logit,
            chosen=st.chosen,
        )
        for st in trace.steps
    ]


def _find(trace: QueryTraced, node: str, hop: int | None) -> Step | None:
    for st in trace.steps:
        if st.node == node and (hop is None or st.hop == hop):
            return st
    return None


def to_label(dp: DecisionPoint, answer: object) -> Label:
    """Validate a teacher's answer for ``dp``.

    Raises:
        ValueError: not scores or chosen targets, unknown targets, scores out of range.
    """
    if isinstance(answer, Mapping):
        pairs = [(str(t), answer[t]) for t in sorted(answer)]
    elif isinstance(answer, (list, tuple)):
        pairs = [(str(t), 1.0) for t in answer]
    else:
        raise ValueError("expected scores by target or a list of chosen targets")
    known = {c.target for c in dp.candidates}
    for target, score in pairs:
        if target not in known:
            raise ValueError(f"{target!r} is not a candidate of {dp.node} at hop {dp.hop}")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise ValueError(f"score of {target!r} is not a number")
        if not math.isfinite(score) or not -1.0 <= score <= 1.0:
            raise ValueError(f"score of {target!r} is outside [-1, 1]")
    return Label(
        dp.trace_id,
        dp.hop,
        dp.node,
        tuple(t for t, _ in pairs),
        tuple(float(x) for _, x in pairs),
    )


def read_labels(path: Path) -> list[str]:
    """The lines of a labels file.

    Raises:
        InputError: the file cannot be read as UTF-8 text.
    """
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read labels file {path}: {exc}", "pass a JSON-lines file"
        ) from None


def parse_labels(lines: Sequence[str], trace: Callable[[str], QueryTraced]) -> list[Label]:
    """Labels from JSON lines ``{"trace_id", "node", "hop"?, "chosen": [...] | "scores":
    {target: score}}``; blank lines are skipped.

    Raises:
        InputError: naming every malformed line by number (nothing is recorded).
    """
    labels: list[Label] = []
    bad: list[str] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            labels.append(_parse_line(line, trace))
        except (ValueError, InputError) as exc:
            bad.append(f"line {n}: {getattr(exc, 'message', exc)}")
    if bad:
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        raise InputError(
            f"{len(bad)} malformed label line(s): " + "; ".join(bad[:3]) + more,
            'each line: {"trace_id": "t31", "node": "a.md::0", "chosen": ["a.md::1"]}',
        )
    return labels


def _parse_line(line: str, trace: Callable[[str], QueryTraced]) -> Label:
    try:
        obj: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("trace_id"), str):
        raise ValueError("expected an object with trace_id, node and chosen or scores")
    hop = obj.get("hop")
    if hop is not None and not isinstance(hop, int):
        raise ValueError("hop must be an integer")
    tr = trace(obj["trace_id"])
    st = _find(tr, str(obj.get("node", "")), hop)
    if st is None:
        raise ValueError(f"trace {tr.trace_id} has no decision at node {obj.get('node')!r}")
    answer = obj.get("scores", obj.get("chosen"))
    dp = DecisionPoint(
        tr.trace_id, st.hop, st.node, tr.query, st.candidates, st.stop_logit, st.chosen
    )
    return to_label(dp, answer)


def ask(
    teacher: Teacher,
    points: Iterable[DecisionPoint],
    *,
    timeout_s: float,
    warn: Warn,
) -> list[Label]:
    """Labels from a callback; a point whose call raises, times out or answers
    nonsense is skipped with a warning."""
    labels: list[Label] = []
    for dp in points:
        got: dict[str, object] = {}

        def run(dp: DecisionPoint = dp, got: dict[str, object] = got) -> None:
            try:
                got["answer"] = teacher(dp)
            except Exception as exc:  # the callback is foreign code: report, never raise
                got["error"] = exc

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(timeout_s)
        where = f"{dp.trace_id} hop {dp.hop} at {dp.node}"
        if worker.is_alive():
            warn(f"teacher timed out after {timeout_s:g} s on {where}; skipped")
        elif "error" in got:
            warn(f"teacher failed on {where}: {got['error']!r}; skipped")
        elif got.get("answer") is not None:
            try:
                labels.append(to_label(dp, got["answer"]))
            except ValueError as exc:
                warn(f"teacher answer for {where} ignored: {exc}")
    return labels


def label_deltas(
    label: Label, trace: QueryTraced, s: Learning
) -> tuple[tuple[EdgeDelta, ...], Any]:
    """The policy-gradient deltas of one label: each scored target taken as the action
    the teacher would have chosen, rewarded by its score at the teacher's weight."""
    st = _find(trace, label.node, label.hop)
    assert st is not None
    pg = msgspec.structs.replace(s, rule="pg", baseline_rate=0.0)
    total: dict[tuple[str, str], float] = {}
    params = None
    for target, score in zip(label.targets, label.scores, strict=True):
        step = msgspec.structs.replace(st, chosen=target)
        d = decide_deltas(
            [step],
            score,
            pg,
            source="teacher",
            damping=trace.params.damping,
            tau=trace.params.tau,
        )
        params = d.params
        for x in d.deltas:
            total[(x.source, x.target)] = total.get((x.source, x.target), 0.0) + x.delta
    deltas = tuple(
        EdgeDelta(source=a, target=b, delta=v) for (a, b), v in sorted(total.items()) if v
    )
    return deltas, params


def decide_teach(
    labels: Sequence[Label],
    traces: Mapping[str, QueryTraced],
    s: Learning,
    *,
    teacher: str,
    relevance: bool,
    first_seq: int,
) -> list[Event]:
    """The events of a batch of labels, each followed by the changes it causes
    (cause_seq = the label's own seq, counted from ``first_seq``)."""
    events: list[Event] = []
    for lab in labels:
        label_seq = first_seq + len(events)
        events.append(
            TeacherLabeled(
                trace_id=lab.trace_id,
                hop=lab.hop,
                node=lab.node,
                targets=lab.targets,
                scores=lab.scores,
                teacher=teacher,
            )
        )
        deltas, params = label_deltas(lab, traces[lab.trace_id], s)
        if deltas:
            events.append(
                EdgesUpdated(
                    updates=group_by_source(deltas),
                    rule="teacher",
                    cause_seq=label_seq,
                    params=params,
                )
            )
        scored = [(t, v) for t, v in zip(lab.targets, lab.scores, strict=True) if t != STOP]
        if relevance and scored:
            values = EdgeValues(
                source=lab.node,
                targets=tuple(t for t, _ in scored),
                values=tuple(v for _, v in scored),
            )
            events.append(EdgeRelevanceSet(updates=(values,), cause_seq=label_seq))
    return events


class TeachReport(msgspec.Struct):
    """Teacher labels decided (and recorded when ``applied``), with their deltas."""

    labels: int
    applied: bool
    deltas: list[EdgeDelta]
    relevance: bool
    first_seq: int = 0


def teach(
    store: Store,
    lines: Sequence[str],
    *,
    apply: bool = False,
    relevance: bool = False,
    teacher: str = "labels",
) -> TeachReport:
    """Teacher labels from JSON lines (see ``parse_labels``): the deltas they cause,
    recorded only with ``apply``.

    Raises:
        InputError: malformed lines, by number; nothing is recorded.
    """
    store.load("config", "graph", "traces")
    labels = parse_labels(lines, lambda tid: trace_of(store, tid))
    return _decide_and_record(store, labels, apply=apply, relevance=relevance, teacher=teacher)


def teach_with(
    store: Store,
    callback: Teacher,
    *,
    trace_ids: Sequence[str] = (),
    apply: bool = False,
    relevance: bool = False,
    timeout_s: float = 10.0,
    name: str = "callback",
) -> TeachReport:
    """Ask a teacher callback about every decision point of the given traces (all
    recorded traces by default); skipped points are reported through ``store.warn``."""
    store.load("config", "graph", "traces")
    ids = list(trace_ids) or sorted(store.state("traces").by_id)
    points = [dp for tid in ids for dp in decision_points(trace_of(store, tid))]
    labels = ask(callback, points, timeout_s=timeout_s, warn=store.warn)
    return _decide_and_record(store, labels, apply=apply, relevance=relevance, teacher=name)


def _decide_and_record(
    store: Store, labels: Sequence[Label], *, apply: bool, relevance: bool, teacher: str
) -> TeachReport:
    got: list[tuple[int, list[Event]]] = []

    def decide(seq: int) -> list[Event]:
        learn = store.setting(Learning)
        traces = {tid: trace_of(store, tid) for tid in sorted({lab.trace_id for lab in labels})}
        events = decide_teach(
            labels, traces, learn, teacher=teacher, relevance=relevance, first_seq=seq + 1
        )
        got.append((seq, events))
        return events if apply else []

    store.transact("teacher", decide)
    seq, events = got[-1]
    deltas = [d for ev in events if isinstance(ev, EdgesUpdated) for d in ev.deltas]
    return TeachReport(len(labels), apply and bool(events), deltas, relevance, seq + 1)
