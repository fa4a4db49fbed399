"""Recall over typed facts: filters, hybrid match, composite score, associative
spreading over entity co-occurrence, and the character budget of the bundle.

Score = w_match * match + w_salience * salience + w_access * access (``ocb.settings.Memory``).
Associative recall starts from the entities the question names (and the entities of
its best direct matches), passes activation to co-occurring entities with weight
co-count * idf(a) * idf(b) (idf = 1 / ln(1 + facts mentioning it), normalised per
source entity) times ``hop_decay`` per hop, drops entities under ``min_activation``,
keeps the ``max_active_entities`` strongest, and reaches the facts of the active
entities with match = ``hop_decay`` * activation. Each such result remembers its entity
path ("via @database -> @slow-endpoint").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from ocb.engine.dates import DAY_NS, Window, today
from ocb.engine.embed import Embedder
from ocb.engine.search import SearchIndex
from ocb.settings import Memory
from ocb_events.schema import RecallHit, RecallTraced, Setting
from projections.memory import Fact, State as MemoryState
from workspace_sync.text import terms

F32 = npt.NDArray[np.float32]
Num = TypeVar("Num", float, F32)
MIN_COSINE = 0.3
"""A fact without a shared term is a direct match only from this cosine up."""


class RecallRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What a recall asks for. ``window`` already holds --since/--between and a date
    phrase of the question; ``entities`` filter (facts mentioning any of them) and seed
    associative recall. ``focus_ns``: a question that is only a date phrase ("what
    happened around Nov 5") has no text to match; its facts match by closeness to that
    day instead, 1 / (1 + days away)."""

    query: str = ""
    k: int = 10
    window: Window = Window()
    kinds: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    min_salience: float = 0.0
    depth: int = 0
    max_chars: int | None = None
    focus_ns: int | None = None


class RecallItem(msgspec.Struct, frozen=True, kw_only=True):
    """One recalled fact (the contract of every retrieval result: id, source, text,
    score) with its kind, day, entities, score parts and entity path."""

    id: str
    source: str
    text: str
    score: float
    kind: str
    day: str
    entities: tuple[str, ...]
    salience: float
    match: float
    access: float
    via: tuple[str, ...] = ()
    confidence: float | None = None
    evidence: tuple[str, ...] = ()
    speaker: str = "user"
    session: str = ""
    turn: int = 0
    claim: bool = False
    """What an assistant said and nothing confirmed yet: ranked after the other facts."""


class FactIndex:
    """The search index of the current facts (a derived cache keyed by the memory
    projection's ``facts_seq``) with their rows' salience, time and kind."""

    def __init__(self, mem: MemoryState, search: SearchIndex) -> None:
        self.search = search
        self.ids = search.ids
        self.facts: list[Fact] = [mem.facts[i] for i in self.ids]
        self.row = {f: i for i, f in enumerate(self.ids)}
        self.salience = np.array([f.salience for f in self.facts], dtype=np.float32)
        self.time_ns = np.array([f.time_ns for f in self.facts], dtype=np.int64)
        self.kind = np.array([f.kind for f in self.facts], dtype="<U1")
        self._mem = mem
        self._entity_rows: dict[str, npt.NDArray[np.intp]] = {}
        self._near: dict[str, list[tuple[str, float]]] = {}

    def neighbours(self, key: str) -> list[tuple[str, float]]:
        """``neighbours(mem, key)``, computed once per index."""
        got = self._near.get(key)
        if got is None:
            got = self._near[key] = neighbours(self._mem, key)
        return got

    def entity_rows(self, key: str) -> npt.NDArray[np.intp]:
        """Rows of the current facts mentioning an entity (by key)."""
        got = self._entity_rows.get(key)
        if got is None:
            ent = self._mem.entities.get(key)
            ids = ent.facts if ent is not None else []
            got = np.array([self.row[f] for f in ids if f in self.row], dtype=np.intp)
            self._entity_rows[key] = got
        return got

    @staticmethod
    def text_of(f: Fact) -> str:
        """What a fact is searched by: its content and entities."""
        return f.content + " " + " ".join(f.entities)

    @classmethod
    def build(cls, mem: MemoryState, embedder: Embedder) -> FactIndex:
        ids = sorted(i for ff in mem.files.values() for i in ff.ids)
        texts = [cls.text_of(mem.facts[i]) for i in ids]
        vecs = embedder.embed(texts) if ids else np.zeros((0, embedder.dim), np.float32)
        return cls(mem, SearchIndex.from_texts(ids, texts, vecs))


def access_decays(
    last_ns: npt.ArrayLike, count: npt.ArrayLike, now_ns: int, s: Memory
) -> npt.NDArray[np.float64]:
    """0.5 ** (days since last recall / half-life) * (1 + boost * ln(1 + count)), element
    by element; ``never_accessed`` where a fact was never recalled (count 0)."""
    n = np.asarray(count, dtype=np.float64)
    days = np.maximum(0.0, (now_ns - np.asarray(last_ns, dtype=np.float64)) / DAY_NS)
    got = 0.5 ** (days / s.half_life_days) * (1 + s.access_boost * np.log1p(n))
    return np.where(n > 0, got, s.never_accessed)


def access_decay(last_ns: int, count: int, now_ns: int, s: Memory) -> float:
    """The access decay of one fact (see ``access_decays``)."""
    return float(access_decays([last_ns], [count], now_ns, s)[0])


def composite(match: Num, salience: Num, access: Num, s: Memory) -> Num:
    """The score of a fact (or of arrays of facts) from its parts."""
    # numpy's stubs type float * array as Any
    return s.w_match * match + s.w_salience * salience + s.w_access * access  # type: ignore[no-any-return]


def idf(mem: MemoryState, key: str) -> float:
    """1 / ln(1 + number of current facts mentioning the entity)."""
    ent = mem.entities.get(key)
    n = len(ent.facts) if ent is not None else 0
    return 1.0 / math.log1p(n) if n else 0.0


def co_weights(mem: MemoryState, key: str) -> list[tuple[str, float]]:
    """Neighbours of an entity with co-count * idf(a) * idf(b), sorted by key."""
    row = mem.co.get(key, {})
    ia = idf(mem, key)
    return [(b, row[b] * ia * idf(mem, b)) for b in sorted(row)]


def neighbours(mem: MemoryState, key: str) -> list[tuple[str, float]]:
    """Neighbours of an entity with their co-occurrence weight divided by the largest
    of them (so the strongest neighbour has 1), sorted by key."""
    nbrs = co_weights(mem, key)
    top = max((w for _, w in nbrs), default=0.0)
    return [(b, w / top if top > 0 else 0.0) for b, w in nbrs]


def spread(
    mem: MemoryState,
    seeds: dict[str, float],
    depth: int,
    s: Memory,
    near: Callable[[str], list[tuple[str, float]]] | None = None,
) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Activation of every entity reached from ``seeds`` (key -> activation) within
    ``depth`` hops, with the key path that reached it (seeds have a one-key path).
    ``near`` gives an entity's normalised neighbours (``neighbours`` by default)."""
    near = near or (lambda key: neighbours(mem, key))
    active: dict[str, tuple[float, tuple[str, ...]]] = {
        k: (a, (k,)) for k, a in sorted(seeds.items())
    }
    frontier = dict(active)
    for _ in range(depth):
        nxt: dict[str, tuple[float, tuple[str, ...]]] = {}
        for a in sorted(frontier):
            act, path = frontier[a]
            step = act * s.hop_decay
            if step < s.min_activation:
                continue
            for b, w in near(a):
                got = step * w
                if got < s.min_activation or b in path:
                    continue
                best = max(active.get(b, (0.0, ()))[0], nxt.get(b, (0.0, ()))[0])
                if got > best:
                    nxt[b] = (got, (*path, b))
        active.update(nxt)
        if len(active) > s.max_active_entities:
            keep = sorted(active.items(), key=lambda kv: (-kv[1][0], kv[0]))
            active = dict(keep[: s.max_active_entities])
            nxt = {k: v for k, v in nxt.items() if k in active}
        frontier = nxt
        if not frontier:
            break
    return active


def _mask(index: FactIndex, mem: MemoryState, req: RecallRequest) -> npt.NDArray[np.bool_]:
    n = len(index.ids)
    mask = np.ones(n, dtype=bool)
    w = req.window
    if w.start_ns:
        mask &= index.time_ns >= w.start_ns
    if w.end_ns is not None:
        mask &= index.time_ns < w.end_ns
    if req.kinds:
        mask &= np.isin(index.kind, list(req.kinds))
    if req.min_salience > 0:
        mask &= index.salience >= req.min_salience
    if req.entities:
        rows = [
            index.row[f]
            for e in req.entities
            for f in (mem.entities[e.lower()].facts if e.lower() in mem.entities else [])
            if f in index.row
        ]
        ent = np.zeros(n, dtype=bool)
        ent[rows] = True
        mask &= ent
    return mask


def _direct(
    index: FactIndex, qvec: F32 | None, req: RecallRequest, mask: npt.NDArray[np.bool_], s: Memory
) -> F32:
    """Match of every row: hybrid for a question; when there is none, closeness to the
    focus day, or 1, for every row the filters keep."""
    if qvec is None:
        if req.focus_ns is None:
            return mask.astype(np.float32)
        days = np.abs(index.time_ns - req.focus_ns) / DAY_NS
        return np.where(mask, 1.0 / (1.0 + days), 0).astype(np.float32)
    hyb, lex, cos = index.search.hybrid(req.query, qvec, s.lexical_weight)
    related = (lex > 0) | (cos >= MIN_COSINE)
    return np.where(mask & related, hyb, 0).astype(np.float32)


def named_entities(mem: MemoryState, query: str) -> list[str]:
    """Keys of the entities a question names (as whole words, case ignored)."""
    text = f" {' '.join(query.lower().replace('@', ' ').split())} "
    return sorted(k for k in mem.entities if f" {k} " in text)


def _seeds(
    mem: MemoryState, index: FactIndex, req: RecallRequest, match: F32, rows: Sequence[int]
) -> dict[str, float]:
    seeds = {k: 1.0 for k in named_entities(mem, req.query)}
    seeds.update({e.lower(): 1.0 for e in req.entities if e.lower() in mem.entities})
    top = float(match[rows[0]]) if rows else 0.0
    for r in rows[:3]:
        for e in index.facts[r].entities:
            k = e.lower()
            seeds[k] = max(seeds.get(k, 0.0), float(match[r]) / top if top > 0 else 0.0)
    return seeds


def reach_damping(mem: MemoryState, key: str) -> float:
    """How much reaching a fact through an entity says: idf scaled to 1 for an entity
    of one fact (ln 2 * idf), so a hub's facts come back weakly."""
    return min(1.0, math.log(2) * idf(mem, key))


def _reach(
    mem: MemoryState, index: FactIndex, req: RecallRequest, match: F32, s: Memory
) -> tuple[F32, npt.NDArray[np.int32], list[tuple[str, ...]]]:
    """Associative match of every row, the path (index into the returned list) that
    gave it (-1: none)."""
    n = len(index.ids)
    reach = np.zeros(n, dtype=np.float32)
    how = np.full(n, -1, dtype=np.int32)
    top = np.argsort(-match, kind="stable")[:3]
    direct = [int(r) for r in top if match[r] > 0]
    seeds = _seeds(mem, index, req, match, direct)
    active = spread(mem, seeds, req.depth, s, index.neighbours)
    paths: list[tuple[str, ...]] = []
    for key in sorted(active):
        act, path = active[key]
        rows = index.entity_rows(key)
        got = np.float32(s.hop_decay * act * reach_damping(mem, key))
        better = rows[got > reach[rows]]
        if len(better):
            reach[better] = got
            how[better] = len(paths)
            paths.append(tuple(mem.entities[k].name for k in path if k in mem.entities))
    return reach, how, paths


def _access(
    mem: MemoryState, index: FactIndex, rows: npt.NDArray[np.intp], now_ns: int, s: Memory
) -> F32:
    """Access decay of ``rows`` (walking whichever is smaller: the rows or the access map)."""
    last = np.zeros(len(rows), dtype=np.int64)
    count = np.zeros(len(rows), dtype=np.int64)
    if len(mem.access) < len(rows):
        pos = np.full(len(index.ids), -1, dtype=np.int64)
        pos[rows] = np.arange(len(rows))
        for fid, acc in mem.access.items():
            r = index.row.get(fid)
            if r is not None and pos[r] >= 0:
                last[pos[r]], count[pos[r]] = acc.last_ns, acc.count
    else:
        for i, r in enumerate(rows.tolist()):
            got = mem.access.get(index.ids[r])
            if got is not None:
                last[i], count[i] = got.last_ns, got.count
    return access_decays(last, count, now_ns, s).astype(np.float32)


def rank(
    mem: MemoryState,
    index: FactIndex,
    qvec: F32 | None,
    req: RecallRequest,
    now_ns: int,
    s: Memory,
    claims: frozenset[str] = frozenset(),
) -> list[RecallItem]:
    """The best ``req.k`` facts, best first (before the character budget): ``claims``
    (what an assistant said and nothing confirmed) after every other fact, and in each
    group, facts matching at least ``match_ratio`` of the best match first, each group
    by score."""
    mask = _mask(index, mem, req)
    match = _direct(index, qvec, req, mask, s)
    how = np.full(len(match), -1, dtype=np.int32)
    paths: list[tuple[str, ...]] = []
    final = match
    if req.depth > 0:
        reach, how, paths = _reach(mem, index, req, match, s)
        reach = np.where(mask, reach, 0).astype(np.float32)
        how = np.where(reach > match, how, -1).astype(np.int32)
        final = np.maximum(match, reach)
    rows = np.flatnonzero(final > 0)
    if not len(rows):
        return []
    m = final[rows]
    access = _access(mem, index, rows, now_ns, s)
    score = composite(m, index.salience[rows], access, s)
    first = m >= s.match_ratio * float(m.max())
    claim = np.array([index.ids[r] in claims for r in rows.tolist()], dtype=bool)
    order = np.lexsort((rows, -index.time_ns[rows], -score, ~first, claim))[: req.k]
    out = []
    for i in order.tolist():
        r = int(rows[i])
        via = paths[how[r]] if how[r] >= 0 else ()
        item = _item(index, r, float(m[i]), float(access[i]), float(score[i]), via)
        out.append(msgspec.structs.replace(item, claim=bool(claim[i])))
    return out


def _item(
    index: FactIndex, r: int, match: float, access: float, score: float, via: tuple[str, ...]
) -> RecallItem:
    f = index.facts[r]
    return RecallItem(
        id=f.id,
        source=f.source,
        text=f.content,
        score=round(score, 6),
        kind=f.kind,
        day=f.day or _day(f.time_ns),
        entities=f.entities,
        salience=f.salience,
        match=round(match, 6),
        access=round(access, 6),
        via=via,
        confidence=f.confidence if f.kind == "O" or f.speaker == "assistant" else None,
        evidence=f.evidence,
        speaker=f.speaker,
        session=f.session,
        turn=f.turn,
    )


def _day(ns: int) -> str:
    return today(ns).isoformat()


def budget(items: list[RecallItem], max_chars: int) -> tuple[list[RecallItem], int]:
    """The items that fit in ``max_chars`` of text, in rank order (the first is cut to
    fit when it alone is longer), and how many were left out."""
    kept: list[RecallItem] = []
    used = 0
    for it in items:
        if used + len(it.text) > max_chars:
            if not kept:
                kept.append(
                    msgspec.structs.replace(it, text=it.text[: max(0, max_chars - 1)] + "…")
                )
            break
        kept.append(it)
        used += len(it.text)
    return kept, len(items) - len(kept)


def decide_recall(
    mem: MemoryState,
    index: FactIndex,
    embedder: Embedder,
    req: RecallRequest,
    *,
    now_ns: int,
    trace_id: str,
    s: Memory,
) -> tuple[RecallTraced, list[RecallItem], int]:
    """The recall's trace, its results within the budget and how many it left out."""
    qvec = embedder.embed([req.query])[0] if terms(req.query) else None
    claims = frozenset(c.id for c in mem.claims())
    items = rank(mem, index, qvec, req, now_ns, s, claims)
    kept, dropped = budget(items, req.max_chars if req.max_chars is not None else s.max_chars)
    options = [
        Setting(key="k", value=req.k),
        Setting(key="depth", value=req.depth),
        Setting(key="min_salience", value=req.min_salience),
        Setting(key="start_ns", value=req.window.start_ns),
    ]
    if req.window.end_ns is not None:
        options.append(Setting(key="end_ns", value=req.window.end_ns))
    if req.focus_ns is not None:
        options.append(Setting(key="focus_ns", value=req.focus_ns))
    options += [Setting(key="kind", value=k) for k in req.kinds]
    options += [Setting(key="entity", value=e) for e in req.entities]
    trace = RecallTraced(
        trace_id=trace_id,
        query=req.query,
        hits=tuple(
            RecallHit(
                fact_id=it.id,
                score=it.score,
                match=it.match,
                salience=it.salience,
                access=it.access,
                via=it.via,
            )
            for it in kept
        ),
        options=tuple(options),
        context_chars=sum(len(it.text) for it in kept),
        dropped=dropped,
    )
    return trace, kept, dropped
