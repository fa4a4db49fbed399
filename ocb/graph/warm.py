"""Warming a brain from an agent's past transcripts (``ocb warm``).

Each answered turn of a transcript (``ocb.graph.transcripts``) is recorded as the query
its user message asks (the trace ``ocb query`` would record, decided against the brain
as the turns before it left it) and, when the transcript holds evidence about the
answer (``ocb.graph.evidence``), an outcome of the ``harvester`` source:

* **used** (+1): the fired chunks whose lines the answer cites, whose text it quotes,
  or which a ``memory_get`` read before the answer (or a ``memory_search`` result the
  answer quotes) showed; the outcome names them as ``used``, so the question's route
  keeps them;
* **corrected** (-1): the user's next message says the answer was wrong; with
  ``corrections`` that message also becomes a CORRECTION of the trace (the injection
  path of ``ocb inject --trace``: it vetoes what it contradicts);
* **missed** (-1): the answer cites or read lines of files the brain indexes, but no
  chunk of the trace holds them: the brain's context lacked what the answer needed;
* no outcome: nothing in the transcript says what the answer used.

NOTE: each turn is one append (its trace, its outcome and the changes it causes, its
correction, and the ``turn_warmed`` mark naming the turn's chain digest), so a warm
killed at any point leaves whole turns; a warm run again skips every turn whose chain
the log marks (a transcript read again records nothing, a grown one only its new turns).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Literal

import msgspec

from ocb.engine.citations import match_citations
from ocb.graph.evidence import Lines, citations, correction_candidate, correction_cue, quotes
from ocb.graph.inject import decide_inject
from ocb.graph.learn import RouteInputs, decide_learn
from ocb.graph.query import decide_at, trace_of
from ocb.graph.transcripts import Transcript, Turn, find_transcripts, read_transcript
from ocb.redaction import redact_input
from ocb.settings import Actor, Indexing, Learning, Routes
from ocb.store import Decision, Store
from ocb_events.errors import InputError
from ocb_events.schema import Event, QueryTraced, TurnWarmed
from projections.graph import CHUNK, State

ACTOR: Actor = "cli"
"""The actor of what a warm records."""
SOURCE = "harvester"
"""The reward source of a warm's outcomes."""
GROUP_TURNS = 32
"""Turns appended per flush of the log."""

Progress = Callable[[str, int, int], None]
Kind = Literal["used", "corrected", "missed", "none"]
_REWARDS: dict[str, float] = {"used": 1.0, "corrected": -1.0, "missed": -1.0}


class Verdict(msgspec.Struct, frozen=True):
    """What a transcript says about an answer: ``kind``, the fired chunks it ``used``,
    the citations the answer wrote (``cited``), and a correction candidate's content
    ("" when none)."""

    kind: Kind
    used: tuple[str, ...] = ()
    cited: tuple[str, ...] = ()
    correction: str = ""

    @property
    def reward(self) -> float:
        return _REWARDS.get(self.kind, 0.0)


class TranscriptRead(msgspec.Struct):
    """One transcript of a warm: its answered turns, those warmed now (``new``) and
    before (``known``), its user messages without an answer (``pending``: the last
    one; ``unanswered``: earlier ones), corrections recorded late (``late``: of a turn
    warmed before its next message was written) and the lines skipped ``(line,
    reason)``."""

    path: str
    session_id: str
    turns: int
    new: int = 0
    known: int = 0
    pending: int = 0
    unanswered: int = 0
    late: int = 0
    skipped: list[tuple[int, str]] = msgspec.field(default_factory=list)


class WarmReport(msgspec.Struct):
    """What a warm recorded (or, with ``dry_run``, would record): queries, outcomes by
    kind, correction candidates and the CORRECTION nodes recorded (``with_corrections``:
    asked for; a correction already held is not recorded again), and the seqs."""

    dry_run: bool
    transcripts: list[TranscriptRead]
    with_corrections: bool = False
    queries: int = 0
    used: int = 0
    corrected: int = 0
    missed: int = 0
    unscored: int = 0
    candidates: int = 0
    corrections: int = 0
    first_seq: int = 0
    last_seq: int = 0

    @property
    def turns(self) -> int:
        return sum(t.turns for t in self.transcripts)


class _Batch(msgspec.Struct):
    events: list[Event]
    blobs: list[bytes]
    verdict: Verdict
    injected: bool


# --------------------------------------------------------------------------- evidence


def judge(graph: State, trace: QueryTraced, turn: Turn, *, reply: str) -> Verdict:
    """The outcome the transcript gives the answer to ``turn`` on ``trace``: corrected
    by ``reply``, else the fired chunks its evidence names (``match_citations``, as
    ``ocb learn --cited`` maps citations, or quoted), else missed or nothing."""
    if correction_cue(reply):
        return Verdict("corrected", correction=correction_candidate(reply))
    lines = evidence(turn)
    named, _, _ = match_citations(graph, trace.fired, [_written(x) for x in lines])
    chunks = [graph.nodes[n] for n in trace.fired if n in graph.nodes]
    quoted = [n.id for n in chunks if n.kind == CHUNK and quotes(turn.answer, n.text)]
    cited = tuple(_written(x) for x in citations(turn.answer))
    if named or quoted:
        return Verdict("used", tuple(sorted({*named, *quoted})), cited)
    if any(x.path in graph.files for x in lines):
        return Verdict("missed", cited=cited)
    return Verdict("none", cited=cited)


def evidence(turn: Turn) -> list[Lines]:
    """The lines the answer to ``turn`` cites, the lines ``memory_get`` read before it,
    and the ``memory_search`` results it quotes."""
    lines = citations(turn.answer)
    for p in turn.passages:
        if p.how == "read" or quotes(turn.answer, p.text):
            lines.append(Lines(p.path, p.start, p.end))
    return list(dict.fromkeys(lines))


def _written(x: Lines) -> str:
    return f"{x.path}#L{x.start}-L{x.end}"


# --------------------------------------------------------------------------- one turn


def _consequences(
    store: Store, trace: QueryTraced, verdict: Verdict, next_seq: int, corrections: bool
) -> tuple[list[Event], list[bytes]]:
    """The outcome of ``trace`` (recorded at ``next_seq``) and the changes it causes,
    then the CORRECTION a candidate makes when ``corrections`` asks for it."""
    events: list[Event] = []
    blobs: list[bytes] = []
    if verdict.reward:
        learned = decide_learn(
            list(trace.steps), verdict.reward, store.setting(Learning),
            source=SOURCE, damping=trace.params.damping, tau=trace.params.tau,
            outcome_seq=next_seq, baselines=store.graph.baseline, trace_id=trace.trace_id,
            used=verdict.used, cited=verdict.cited,
            route=RouteInputs(store.state("routes"), store.graph, trace, store.setting(Routes)),
        )  # fmt: skip
        events += learned.events
    if corrections and verdict.correction:
        content = redact_input(store.warn, store.secrets(), "correction", verdict.correction)
        got = decide_inject(
            store.graph, store.search_index(), store.embedder(), "CORRECTION", content,
            store.setting(Indexing), trace=trace,
        )  # fmt: skip
        events += got.events
        blobs += got.blobs
    return events, blobs


def decide_turn(store: Store, t: Transcript, turn: Turn, *, corrections: bool) -> _Batch:
    """A turn's append: its trace, its outcome and what that causes, and its mark."""
    seq = store.log.last_seq
    trace, _ = decide_at(store, turn.question, store.now)
    verdict = judge(store.graph, trace, turn, reply=turn.reply)
    more, blobs = _consequences(store, trace, verdict, seq + 2, corrections)
    mark = TurnWarmed(
        path=t.path, chain=turn.chain, turn=turn.index, trace_id=trace.trace_id,
        session_id=t.session_id, replied=bool(turn.reply),
    )  # fmt: skip
    return _Batch([trace, *more, mark], blobs, verdict, bool(blobs))


def decide_late(
    store: Store, t: Transcript, turn: Turn, mark: TurnWarmed, *, corrections: bool
) -> _Batch | None:
    """The correction of a turn warmed before the user's next message was written,
    when that message (now read) corrects it; None otherwise."""
    if not (turn.reply and not mark.replied and correction_cue(turn.reply) and mark.trace_id):
        return None
    try:
        trace = trace_of(store, mark.trace_id)
    except InputError:  # its trace was forgotten: nothing to correct
        return None
    verdict = Verdict("corrected", correction=correction_candidate(turn.reply))
    more, blobs = _consequences(store, trace, verdict, store.log.last_seq + 1, corrections)
    again = msgspec.structs.replace(mark, path=t.path, replied=True)
    return _Batch([*more, again], blobs, verdict, bool(blobs))


# --------------------------------------------------------------------------- on a store


def warmed(store: Store) -> dict[str, TurnWarmed]:
    """The mark of every turn the log holds, by chain digest (the newest for a chain)."""
    marks: dict[str, TurnWarmed] = {}
    for rec in store.log.read(1, store.horizon, light=True):
        if isinstance(rec.event, TurnWarmed):
            marks[rec.event.chain] = rec.event
    return marks


def _known(t: Transcript, marks: dict[str, TurnWarmed]) -> int:
    """How many turns of ``t`` the log holds: through the last one whose chain it marks."""
    return max((turn.index + 1 for turn in t.turns if turn.chain in marks), default=0)


class _Run:
    """One warm under way: the marks known so far, the tally and the progress."""

    def __init__(self, store: Store, report: WarmReport, corrections: bool, tick: Progress):
        self.store, self.report, self.corrections, self.tick = store, report, corrections, tick
        self.marks = warmed(store)
        self.done = 0
        self.total = 0

    def apply(self, batch: _Batch) -> None:
        """Record a turn's append (unless a dry run), then count it."""
        r = self.report
        if not r.dry_run:
            # the turn was decided as the log stood then: recorded as decided
            recs = self.store.transact(ACTOR, lambda _seq: Decision(batch.events, batch.blobs))
            r.first_seq, r.last_seq = r.first_seq or recs[0].seq, recs[-1].seq
        mark = batch.events[-1]
        assert isinstance(mark, TurnWarmed)
        self.marks[mark.chain] = mark
        kind = batch.verdict.kind
        r.used += kind == "used"
        r.corrected += kind == "corrected"
        r.missed += kind == "missed"
        r.unscored += kind == "none"
        r.candidates += bool(batch.verdict.correction)
        r.corrections += batch.injected

    def transcript(self, t: Transcript) -> TranscriptRead:
        """Warm what is new in ``t``, in groups of ``GROUP_TURNS`` turns per flush."""
        known = _known(t, self.marks)
        row = TranscriptRead(
            t.path, t.session_id, len(t.turns), known=known, pending=t.pending,
            unanswered=t.unanswered, skipped=list(t.skipped),
        )  # fmt: skip
        if known:
            prev = t.turns[known - 1]
            late = decide_late(
                self.store, t, prev, self.marks[prev.chain], corrections=self.corrections
            )
            if late is not None:
                self.apply(late)
                row.late += 1
        for start in range(known, len(t.turns), GROUP_TURNS):
            with self._group():
                for turn in t.turns[start : start + GROUP_TURNS]:
                    got = decide_turn(self.store, t, turn, corrections=self.corrections)
                    self.apply(got)
                    self.report.queries += 1
                    row.new += 1
                    self.done += 1
                    self.tick("warming", self.done, self.total)
        return row

    @contextmanager
    def _group(self) -> Iterator[None]:
        with nullcontext() if self.report.dry_run else self.store.log.group():
            yield


def warm(
    store: Store,
    paths: Sequence[Path],
    *,
    corrections: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> WarmReport:
    """Warm ``store`` from the transcripts at ``paths`` (see ``Brain.warm_sessions``).

    Raises:
        InputError: a missing path, a directory without ``*.jsonl``, a file that is not
            JSONL (all checked before anything is recorded), or a brain opened as of a
            past point.
    """
    if store.as_of is not None and not dry_run:
        raise InputError(
            "a brain opened as of a past point records nothing", "leave out `as_of`", param="as_of"
        )
    transcripts = [read_transcript(p) for p in find_transcripts(paths)]
    store.load("config", "graph", "traces", "routes")
    report = WarmReport(dry_run=dry_run, transcripts=[], with_corrections=corrections)
    run = _Run(store, report, corrections, progress or (lambda _s, _d, _t: None))
    run.total = sum(len(t.turns) - _known(t, run.marks) for t in transcripts)
    for t in transcripts:
        report.transcripts.append(run.transcript(t))
    return report
