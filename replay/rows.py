"""The rows of the analytics store: the pure fold of log records into the tables of
``replay.tables`` (``RowFold``), with the graph projection folded alongside.

NOTE: ``before`` and ``after`` of a weight change are read from the graph
projection just before and after the record is folded into it, so they are what the
graph holds at that seq; only ``EdgesUpdated``, the hot path, is computed here (the same
clip to [-1, 1] as the fold, for a whole update at once) and then folded. Grouped
tables are gathered as columns (``replay.columns.Tails``), the others as row tuples.

Nothing here touches DuckDB; ``replay.analytics`` loads the rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from ocb_events.codec import EdgesPackedRaw, TraceHead
from ocb_events.packing import pack_trace, raw_columns
from ocb_events.schema import (
    STOP,
    AuthoritySet,
    ChunkSpan,
    ChunkText,
    ConfigChanged,
    EdgeDeltas,
    EdgeRelevanceSet,
    EdgesCreated,
    EdgesRemoved,
    EdgesUpdated,
    FileChanged,
    FileIndexed,
    FileMoved,
    FileRemoved,
    FoldRecord,
    MaintenanceRan,
    NodeInjected,
    NodesMerged,
    NodeSplit,
    OutcomeRecorded,
    QueryTraced,
    Record,
    Retracted,
    RouteUpdated,
    TeacherLabeled,
)
from projections import ROUTES, graph
from projections.graph import Node, State as GraphState
from replay.columns import DeltaTails, Tails
from replay.delta_runs import DeltaRun
from replay.tables import GROUPED, HISTORY, tail_columns
from replay.trace_rows import Names, PackedTrace, TraceRows, UpdateRecord, UpdatesRaw

Pair = tuple[str, str]

FileEvent = FileIndexed | FileChanged | FileRemoved | FileMoved
_FILE_ACTIONS: dict[type, str] = {
    FileIndexed: "indexed",
    FileChanged: "changed",
    FileRemoved: "removed",
    FileMoved: "moved",
}
"""The ``action`` of each file event in the ``files`` table."""


def _file_parts(
    g: graph.State, ev: FileEvent
) -> tuple[list[str], list[ChunkText], list[ChunkSpan], list[ChunkText], list[str]]:
    """What a file event does to the graph ``g`` before it is folded: the ids it
    removes, the chunks it adds, keeps and revises, and the ids a move renames."""
    if isinstance(ev, FileIndexed):
        old = g.files.get(ev.path)
        new = {c.id for c in ev.chunks}
        return [i for i in (old.chunks if old else ()) if i not in new], list(ev.chunks), [], [], []
    if isinstance(ev, FileChanged):
        return list(ev.removed), list(ev.added), list(ev.kept), list(ev.revised), []
    if isinstance(ev, FileRemoved):
        return list(ev.removed), [], [], [], []
    entry = g.files.get(ev.old_path) if ev.old_path != ev.path else None
    if entry is None:
        return [], [], [], [], []
    there = g.files.get(ev.path)
    replaced = [i for i in (there.chunks if there else ()) if i not in entry.chunks]
    return replaced, [], [], [], list(entry.chunks)


def _edited(was: Node, now: Node) -> bool:
    """Whether a chunk recorded again got another text or heading (or was an alias)."""
    return was.text_hash != now.text_hash or was.heading != now.heading or not was.text


_GRAPH_TAGS = ROUTES["graph"]
EVENTS_ONLY = frozenset(
    {
        "content_forgotten",
        "embedder_configured",
        "facts_recorded",
        "kg_fact_set",
        "log_repaired",
        "recall_traced",
        "record_lost",
        "reflect_ran",
        "turn_warmed",
    }
)
"""The event tags analytics keeps only as a row of ``events``: no table of their own,
no change to the graph. Every other event type has a ``RowFold`` handler or is folded
by the graph projection, so a new event type joins one of the three (a test over the
schema's union holds it to that)."""


_QUIET = frozenset(
    {EdgesUpdated, UpdatesRaw, EdgesPackedRaw, QueryTraced, TraceHead, OutcomeRecorded}
)
"""The records a run of weight updates carries on over: they neither read nor change
the graph (``RowFold.settle``)."""


class RowFold:
    """The rows of new records, table by table, with the graph folded alongside.

    ``graph`` restores the graph at the store's seq when a record first needs it;
    ``bulk`` gathers a weight update's rows a source at a time (``bulk=False``: row by
    row, the reference the bulk path is tested against; the same rows either way);
    ``traces`` maps trace ids seen in this run to their seq (older ones are resolved
    against the store at flush); ``last_run`` is the newest maintenance run (op, seq);
    ``names`` codes the names of coded columns (``replay.tables.CODED``): those the
    store holds already, then the new ones.
    """

    def __init__(
        self,
        load_graph: Callable[[], graph.State],
        last_run: tuple[str, int],
        *,
        bulk: bool = True,
        names: Names | None = None,
    ) -> None:
        self._load_graph = load_graph
        self.bulk = bulk
        self.g: graph.State | None = None
        self.last_run = last_run
        self.traces: dict[str, int] = {}
        self.names = names if names is not None else Names()
        self.run = DeltaRun(self.names)
        self._tags: dict[type, str] = {EdgesPackedRaw: "edges_updated"}  # its stored form
        self._handlers: dict[type, Callable[[Any, Any], None]] = {
            QueryTraced: self._trace if bulk else self._trace_rows,
            TraceHead: self._packed,
            UpdatesRaw: self._update,
            EdgesPackedRaw: self._update,
            OutcomeRecorded: self._outcome,
            EdgesUpdated: self._update,
            EdgesCreated: self._created,
            EdgesRemoved: self._removed,
            NodeInjected: self._inject,
            NodesMerged: self._merge,
            NodeSplit: self._split,
            FileIndexed: self._file,
            FileChanged: self._file,
            FileRemoved: self._file,
            FileMoved: self._file,
            AuthoritySet: self._authority,
            MaintenanceRan: self._maintenance,
            TeacherLabeled: self._label,
            ConfigChanged: self._config,
            EdgeRelevanceSet: self._relevance,
            Retracted: self._retracted,
            RouteUpdated: self._route,
        }
        self.reset()

    @property
    def handled(self) -> frozenset[type]:
        """The event types with rows of their own (besides ``events``)."""
        return frozenset(self._handlers)

    def reset(self) -> None:
        """Start a new batch of rows (the graph and the lookups carry on)."""
        self.rows: dict[str, list[Any]] = {n: [] for n in HISTORY if n not in GROUPED}
        self.tails: dict[str, Tails] = {
            n: DeltaTails(self.names) if n == "deltas" else Tails(len(tail_columns(n)))
            for n in GROUPED
        }
        self.groups: dict[str, list[tuple[tuple[Any, ...], int]]] = {n: [] for n in GROUPED}
        self.trace_rows = TraceRows(self.names)
        self.unresolved: list[int] = []
        self.nodes_touched: set[str] = set()
        self.sources_touched: set[str] = set()  # their edges are rewritten at flush
        self.graph_changed = False
        self.count = 0

    def graph(self) -> graph.State:
        if self.g is None:
            self.g = self._load_graph()
        return self.g

    def _evolve(self, rec: Record | FoldRecord) -> None:
        graph.evolve(self.graph(), rec)
        self.graph_changed = True

    def add(self, rec: Record | FoldRecord | PackedTrace | UpdateRecord) -> None:
        ev = rec.event
        kind = type(ev)
        tag = self._tags.get(kind)
        if tag is None:
            tag = self._tags[kind] = str(kind.__struct_config__.tag)
        self.rows["events"].append((rec.seq, rec.ts, rec.actor, tag))
        self.count += 1
        if kind not in _QUIET and len(self.run):
            self.settle()
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(rec, ev)
        elif tag in _GRAPH_TAGS:
            assert not isinstance(rec, PackedTrace | UpdateRecord)  # (they have handlers)
            self._evolve(rec)

    # ------------------------------------------------------------ traces and outcomes

    def _head(
        self, rec: Any, ev: QueryTraced | TraceHead, fired: int, seeds: int, steps: int
    ) -> None:
        self.traces[ev.trace_id] = rec.seq
        self.rows["traces"].append(
            (
                rec.seq, rec.ts, ev.trace_id, ev.query, ev.chat_id, ev.stop_reason,
                ev.context_chars, fired, seeds, steps, len(ev.vetoed), ev.params.mode,
                ev.route, ev.route_mode,
            )
        )  # fmt: skip

    def _packed(self, rec: PackedTrace, ev: TraceHead) -> None:
        """A trace left packed: its rows gathered from its body's columns."""
        self._head(rec, ev, *rec.sizes)
        self.trace_rows.add(rec.seq, rec.cols, rec.z, rec.where)

    def _trace(self, rec: Record, ev: QueryTraced) -> None:
        """A decoded trace, packed to join the others (``pack_trace`` keeps every
        value: the same rows as ``_trace_rows``)."""
        body = pack_trace(ev.seeds, ev.steps, ev.fired)
        self._head(rec, ev, len(ev.fired), len(ev.seeds), len(ev.steps))
        self.trace_rows.add(rec.seq, raw_columns(body), body, ("", 0))

    def _trace_rows(self, rec: Record, ev: QueryTraced) -> None:
        """A trace row by row (the reference of the bulk path)."""
        seq, tid, steps = rec.seq, ev.trace_id, ev.steps
        self._head(rec, ev, len(ev.fired), len(ev.seeds), len(steps))
        head = (seq, tid)
        groups, tails = self.groups, self.tails
        groups["fired"].append((head, len(ev.fired)))
        tails["fired"].cols[0].extend(ev.fired)
        groups["seeds"].append((head, len(ev.seeds)))
        node, score, lexical, vector = tails["seeds"].cols
        node.extend([s.node_id for s in ev.seeds])
        score.extend([s.score for s in ev.seeds])
        lexical.extend([s.lexical for s in ev.seeds])
        vector.extend([s.vector for s in ev.seeds])
        groups["steps"].append((head, len(steps)))
        hop, at, chosen, count, stop_logit, weight, logit, tier, followed = tails["steps"].cols
        hop.extend([s.hop for s in steps])
        at.extend([s.node for s in steps])
        chosen.extend([s.chosen for s in steps])
        count.extend([len(s.candidates) for s in steps])
        stop_logit.extend([s.stop_logit for s in steps])
        followed.extend([list(s.followed) for s in steps])
        for s in steps:
            target = s.chosen
            for c in s.candidates:
                if c.target == target:
                    weight.append(c.weight)
                    logit.append(c.logit)
                    tier.append(c.tier)
                    break
            else:
                weight.append(None)
                logit.append(None)
                tier.append(None)

    def _outcome(self, rec: Record, ev: OutcomeRecorded) -> None:
        tseq = self.traces.get(ev.trace_id) if ev.trace_id else None
        rows = self.rows["outcomes"]
        if ev.trace_id and tseq is None:
            self.unresolved.append(len(rows))
        rows.append(
            (rec.seq, rec.ts, rec.actor, ev.trace_id, tseq, ev.chat_id, ev.reward, ev.source)
            + (list(ev.fired_ids),)
        )

    # ------------------------------------------------------------ weights

    def _update(self, rec: Record, ev: EdgesUpdated | UpdatesRaw | EdgesPackedRaw) -> None:
        """A weight update: gathered into the run (``settle``), or row by row (the
        reference of the bulk path) when not ``bulk``."""
        if self.bulk or not isinstance(ev, EdgesUpdated):
            self.run.add(rec.seq, rec.ts, ev)
            return
        g = self.graph()
        tails = self.tails["deltas"]
        first = len(tails)
        # a pair twice in one record (never from our rules) sees its first change
        sources = [u.source for u in ev.updates]
        twice = len(set(sources)) < len(sources) or any(
            len(set(u.targets)) < len(u.targets) for u in ev.updates
        )
        now: dict[Pair, float] | None = {} if twice else None
        for u in ev.updates:
            self._update_rows(g, u, now)
        head = (rec.seq, rec.ts, ev.rule, ev.cause_seq, "edges_updated")
        self.groups["deltas"].append((head, len(tails) - first))
        self.nodes_touched.update(b.node for b in ev.baselines)
        self._evolve(rec)

    def settle(self) -> None:
        """Fold the weight updates gathered since the last graph record into the graph
        and their rows (``replay.delta_runs``); before any other record that reads or
        changes the graph, and before the rows are loaded."""
        if not len(self.run):
            return
        heads, cols, stops, sources = self.run.settle(self.graph())
        self.groups["deltas"].extend(heads)
        tails = self.tails["deltas"]
        assert isinstance(tails, DeltaTails)
        tails.add_columns([cols[c] for c in tail_columns("deltas")])
        self.nodes_touched.update(stops)
        self.sources_touched.update(sources)
        self.graph_changed = True

    def _update_rows(self, g: GraphState, u: EdgeDeltas, now: dict[Pair, float] | None) -> None:
        """One source's changes row by row (``now``: the pairs changed earlier in the
        record, when one may come twice)."""
        src, rows = u.source, self.tails["deltas"]
        targets = g.out.get(src)
        for t, d in zip(u.targets, u.deltas, strict=False):
            before = now.get((src, t)) if now is not None else None
            if before is None:
                if t == STOP:
                    if src not in g.nodes:
                        continue
                    before = g.stop.get(src, 0.0)
                else:
                    edge = targets.get(t) if targets is not None else None
                    if edge is None:
                        continue
                    before = edge.weight
            w = before + d
            after = -1.0 if w < -1.0 else 1.0 if w > 1.0 else w
            if now is not None:
                now[(src, t)] = after
            rows.add((src, t, before, after, d))
            if t == STOP:
                self.nodes_touched.add(src)
            else:
                self.sources_touched.add(src)

    def _weights(self, pairs: Iterable[Pair]) -> dict[Pair, tuple[float, int] | None]:
        out = self.graph().out
        got: dict[Pair, tuple[float, int] | None] = {}
        for s, t in pairs:
            edge = (out.get(s) or {}).get(t)
            got[(s, t)] = None if edge is None else (edge.weight, edge.last_seq)
        return got

    def _around(self, node_ids: Iterable[str]) -> set[Pair]:
        """Every edge into or out of the given nodes."""
        g = self.graph()
        pairs: set[Pair] = set()
        for n in node_ids:
            pairs.update((n, t) for t in g.out.get(n) or {})
            pairs.update((s, n) for s in g.incoming(n))
        return pairs

    def _diff(
        self,
        rec: Record,
        explicit: set[Pair],
        nodes: Iterable[str],
        rule: str,
        cause: int,
    ) -> None:
        """Fold a record that sets or drops edges, with one row per edge it changed."""
        pairs = explicit | self._around(nodes)
        before = self._weights(pairs)
        self._evolve(rec)
        after = self._weights(pairs)
        rows, seq, n = self.tails["deltas"], rec.seq, 0
        for p in sorted(pairs):
            b, a = before[p], after[p]
            wb, wa = (b[0] if b else None), (a[0] if a else None)
            set_here = a is not None and a[1] == seq and p in explicit
            if wb == wa and not set_here:
                continue
            rows.add((p[0], p[1], wb, wa, None))
            n += 1
            self.sources_touched.add(p[0])
        head = (seq, rec.ts, rule, cause, self._tags[type(rec.event)])
        self.groups["deltas"].append((head, n))

    def _created(self, rec: Record, ev: EdgesCreated) -> None:
        op, run = self.last_run
        cause = run if ev.cause and ev.cause == op else rec.seq
        pairs = {(e.source, e.target) for e in ev.edges}
        self._diff(rec, pairs, (), ev.cause or "create", cause)

    def _removed(self, rec: Record, ev: EdgesRemoved) -> None:
        self._diff(rec, {(e.source, e.target) for e in ev.edges}, (), "prune", ev.cause_seq)

    def _relevance(self, rec: Record, ev: EdgeRelevanceSet) -> None:
        self.sources_touched.update(u.source for u in ev.updates if u.targets)
        self._evolve(rec)

    # ------------------------------------------------------------ nodes

    def _life(
        self,
        rec: Record,
        node: str,
        action: str,
        at: Node | None,
        h: str = "",
        other: str = "",
        detail: str = "",
    ) -> None:
        """One lifecycle row: ``h`` is the file version (content hash), ``other`` the
        node on the other side of a merge or split, ``detail`` what else it needs."""
        path, lo, hi = (at.path, at.start_line, at.end_line) if at else ("", 0, 0)
        row = (rec.seq, rec.ts, node, action, path, lo, hi, h, other, detail)
        self.rows["lifecycle"].append(row)
        self.nodes_touched.add(node)

    def _aliases(self, ids: Iterable[str]) -> list[str]:
        """The aliases merged into ``ids`` (removed with them)."""
        g = self.graph()
        if not g.merged:
            return []
        gone = set(ids)
        return sorted(a for a, k in g.merged.items() if k in gone)

    def _file(self, rec: Record, ev: FileEvent) -> None:
        g = self.graph()
        removed, added, kept, revised, moved = _file_parts(g, ev)
        aliases = self._aliases([*removed, *(c.id for c in revised)])  # those that go
        ids = [*removed, *aliases, *(c.id for c in (*added, *revised)), *(s.id for s in kept)]
        prior = {i: g.nodes.get(i) for i in [*ids, *moved]}
        self._diff(rec, set(), [i for i in removed if prior[i] is not None], "sync", rec.seq)
        h = getattr(ev, "content_hash", "")
        action = _FILE_ACTIONS[type(ev)]
        for i in dict.fromkeys([*removed, *aliases]):
            if prior[i] is not None and i not in g.nodes:
                self._life(rec, i, "removed", prior[i], h, "", action)
        for s in kept:
            was, now = prior[s.id], g.nodes.get(s.id)
            if was and now and (was.start_line, was.end_line) != (now.start_line, now.end_line):
                self._life(rec, s.id, "moved", now, h)
        for c in (*revised, *added):
            was, now = prior[c.id], g.nodes.get(c.id)
            if now is not None and (was is None or _edited(was, now)):
                self._life(rec, c.id, "created" if was is None else "edited", now, h)
        for i in moved:
            was, now = prior[i], g.nodes.get(i)
            if was is not None and now is not None and was.path != now.path:
                self._life(rec, i, "renamed", now, h, "", was.path)
        old_path = ev.old_path if isinstance(ev, FileMoved) else ""
        counts = (len(added), len(kept) + len(moved), len(set(removed)), len(revised))
        self.rows["files"].append((rec.seq, rec.ts, ev.path, action, h, *counts, old_path))

    def _route(self, rec: Record, ev: RouteUpdated) -> None:
        """A route's credit changes; the question only on the route's first record."""
        self.rows["route_credits"].extend(
            (rec.seq, rec.ts, ev.route_id, ev.query, c.node, c.delta, ev.cause_seq)
            for c in ev.credits
        )

    def _inject(self, rec: Record, ev: NodeInjected) -> None:
        was = self.graph().nodes.get(ev.node_id)
        pairs = {(c.source, c.target) for c in ev.connections}
        self._diff(rec, pairs, (), "inject", rec.seq)
        action = "injected" if was is None else "edited"
        self._life(rec, ev.node_id, action, None, "", "", ev.node_type)
        self.rows["injections"].append(
            (rec.seq, rec.ts, ev.node_id, ev.node_type, ev.content, ev.chat_id, ev.trace_id)
            + (ev.anchor_query, ev.authority, len(ev.connections))
        )

    def _merge(self, rec: Record, ev: NodesMerged) -> None:
        g = self.graph()
        was = g.merged.get(ev.absorbed)
        pairs = {(e.source, e.target) for e in ev.edges}
        self._diff(rec, pairs, [ev.absorbed], "merge", ev.cause_seq)
        if was is None and g.merged.get(ev.absorbed) == ev.kept:
            self._life(rec, ev.absorbed, "merged_into", g.nodes.get(ev.absorbed), "", ev.kept)
            self._life(rec, ev.kept, "absorbed", g.nodes.get(ev.kept), "", ev.absorbed)

    def _split(self, rec: Record, ev: NodeSplit) -> None:
        g = self.graph()
        old = g.nodes.get(ev.node_id)
        aliases = {a: g.nodes.get(a) for a in self._aliases([ev.node_id])}
        pairs = {(e.source, e.target) for e in ev.edges}
        self._diff(rec, pairs, [ev.node_id] if old is not None else [], "split", ev.cause_seq)
        if old is None or ev.node_id in g.nodes:
            return
        entry = g.files.get(old.path)
        h = entry.content_hash if entry is not None else ""
        for c in sorted(ev.parts, key=lambda c: (c.start_line, c.id)):
            self._life(rec, ev.node_id, "split_into", old, h, c.id)
            self._life(rec, c.id, "split_from", g.nodes.get(c.id), h, ev.node_id)
        for a, was in aliases.items():
            if a not in g.nodes:
                self._life(rec, a, "removed", was, h, ev.node_id, "node_split")

    def _authority(self, rec: Record, ev: AuthoritySet) -> None:
        g = self.graph()
        entry = g.files.get(ev.path) if ev.path else None
        ids = sorted(set(ev.node_ids) | set(entry.chunks if entry else ()))
        was = {i: g.nodes[i].authority for i in ids if i in g.nodes}
        self._evolve(rec)
        for i, auth in was.items():
            now = g.nodes.get(i)
            if now is not None and now.authority != auth:
                self._life(rec, i, "authority", now, "", "", now.authority)

    # ------------------------------------------------------------ the rest

    def _maintenance(self, rec: Record, ev: MaintenanceRan) -> None:
        params = json.dumps({s.key: s.value for s in ev.params}, separators=(",", ":"))
        self.rows["maintenance"].append((rec.seq, rec.ts, ev.op, params, ev.summary))
        self.last_run = (ev.op, rec.seq)
        self._evolve(rec)

    def _label(self, rec: Record, ev: TeacherLabeled) -> None:
        self.rows["labels"].append(
            (rec.seq, rec.ts, ev.trace_id, ev.hop, ev.node, ev.teacher)
            + (list(ev.targets), list(ev.scores))
        )

    def _retracted(self, rec: Record, ev: Retracted) -> None:
        """A retraction: its row; for an injection the node's removal (one delta row
        per edge it took, rule ``retract``) and a ``retracted`` step of its life. The
        reversal of an outcome or a label follows as its own ``edges_updated``."""
        self.rows["retractions"].append(
            (rec.seq, rec.ts, rec.actor, ev.target_seq, ev.kind, ev.node_id, ev.reason)
        )
        node = self.graph().nodes.get(ev.node_id) if ev.kind == "injection" else None
        if node is None or node.kind == graph.CHUNK:
            self._evolve(rec)
            return
        self._diff(rec, set(), [ev.node_id], "retract", rec.seq)
        self._life(rec, ev.node_id, "retracted", None, "", "", str(ev.target_seq))

    def _config(self, rec: Record, ev: ConfigChanged) -> None:
        self.rows["config"].append((rec.seq, rec.ts, ev.key, json.dumps(ev.value)))

    # ------------------------------------------------------------ the present

    def current(self) -> dict[str, list[tuple[Any, ...]]]:
        """Rows of the nodes touched since ``reset`` and of every edge out of the
        sources touched, as they are now."""
        self.settle()
        g = self.g
        if g is None:
            return {"nodes": [], "edges": []}
        nodes = []
        for i in sorted(self.nodes_touched):
            n = g.nodes.get(i)
            if n is not None:
                nodes.append(
                    (i, n.kind, n.path, n.start_line, n.end_line, n.heading, n.authority)
                    + (n.created_seq, len(n.text), g.stop.get(i, 0.0), g.baseline.get(i, 0.0))
                    + (g.merged.get(i),)
                )
        edges = []
        for s in sorted(self.sources_touched):
            for t, e in sorted((g.out.get(s) or {}).items()):
                edges.append((s, t, e.weight, e.kind, e.relevance, e.last_seq))
        return {"nodes": nodes, "edges": edges}
