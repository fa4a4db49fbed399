"""Workspace syncs: deciding one (file events, vectors for new chunks, and the edges
that connect them: siblings inside a file, a few similar chunks across files) and
recording it on a store."""

from __future__ import annotations

from collections.abc import Callable, Collection, MutableMapping, Sequence
from hashlib import sha256
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt

from ocb.engine.embed import Ahead, Embedder, Matrix, chunk_input, pack_matrix
from ocb.engine.embedders import embedder_spec
from ocb.graph.carry import Carry
from ocb.graph.copies import screen_copy
from ocb.graph.names import check_root, secret_paths
from ocb.redaction import warn_file
from ocb.reports import SyncReport
from ocb.settings import Indexing, actor_of
from ocb.shared_log import write_bases
from ocb.store import Decision, Store
from ocb_events.errors import BrainExists, WorkspaceError
from ocb_events.schema import (
    ChunkSpan,
    ChunkText,
    EdgesCreated,
    EdgeSpec,
    EmbedderConfigured,
    Event,
    FactsRecorded,
    FileChanged,
    FileIndexed,
    FileMoved,
    FileRemoved,
    NodesEmbedded,
    WorkspaceAttached,
)
from ocb_events.texts import chunks_of
from projections.graph import CHUNK, State
from projections.memory import State as MemoryState, spec_of
from workspace_sync import (
    FileText,
    PreviousChunk,
    PreviousFacts,
    PreviousFile,
    Problem,
    Skipped,
    diff_facts,
    diff_workspace,
    read_text,
    scan_paths,
    scan_workspace,
)
from workspace_sync.scan import MAX_FILE_BYTES
from workspace_sync.secrets import Finding, Scanner, redact_files

Progress = Callable[[str, int, int], None]
Scanned = tuple[list[FileText], list[Skipped]]
EMBED_BATCH = 1024
_SIM_BLOCK = 1024


class SyncPlan(msgspec.Struct):
    """The events of a sync, the blobs they name, and the summary for the user (its
    counts of files, chunks and edges, completed once the plan is recorded)."""

    events: list[Event] = msgspec.field(default_factory=list)
    blobs: list[bytes] = msgspec.field(default_factory=list)
    skipped: list[Skipped] = msgspec.field(default_factory=list)
    report: SyncReport = msgspec.field(default_factory=SyncReport)
    secrets: list[tuple[str, Finding]] = msgspec.field(default_factory=list)
    """Secrets redacted from the files this sync records, as (path, finding)."""
    bases: dict[str, str] | None = None
    """For a brain on a shared log: its copy's sync bases once this is recorded."""


def previous_files(graph: State, scope: frozenset[str] | None = None) -> dict[str, PreviousFile]:
    """The brain's view of every indexed file (of ``scope``), as the differ needs it
    (each chunk with its text and heading, for the revision rule)."""
    out = {}
    for path, e in graph.files.items():
        if scope is not None and path not in scope:
            continue
        nodes = [graph.nodes[i] for i in e.chunks]
        chunks = [PreviousChunk(n.id, n.text_hash, n.text, n.heading) for n in nodes]
        out[path] = PreviousFile(e.content_hash, chunks, e.next_ordinal)
    return out


def _new_chunks(events: Sequence[Event]) -> list[tuple[str, ChunkText]]:
    """Every chunk whose text a sync records, to embed: the chunks of new files, and
    the added and revised chunks of changed ones."""
    out: list[tuple[str, ChunkText]] = []
    for ev in events:
        if isinstance(ev, (FileIndexed, FileChanged)):
            out.extend((ev.path, c) for c in chunks_of(ev))
    return out


def _place(c: ChunkText | ChunkSpan) -> tuple[int, int, str]:
    return (c.start_line, c.start_col, c.id)


def _file_orders(graph: State, events: Sequence[Event]) -> list[list[str]]:
    orders = []
    for ev in events:
        if isinstance(ev, FileIndexed):
            orders.append([c.id for c in sorted(ev.chunks, key=_place)])
        elif isinstance(ev, FileChanged):
            both: list[ChunkText | ChunkSpan] = [*ev.kept, *ev.revised, *ev.added]
            orders.append([c.id for c in sorted(both, key=_place)])
    return orders


def sibling_edges(graph: State, events: Sequence[Event], s: Indexing) -> list[EdgeSpec]:
    """Both directions between neighbouring chunks of each new or changed file,
    where no edge exists yet."""
    out: list[EdgeSpec] = []
    for order in _file_orders(graph, events):
        for a, b in zip(order, order[1:], strict=False):
            for src, dst in ((a, b), (b, a)):
                if dst not in graph.out.get(src, {}):
                    out.append(
                        EdgeSpec(source=src, target=dst, weight=s.sibling_weight, kind="sibling")
                    )
    return out


def similar_edges(
    new_ids: Sequence[str],
    new_vecs: Matrix,
    all_ids: Sequence[str],
    all_vecs: Matrix,
    file_of: dict[str, str],
    existing: Callable[[str, str], bool],
    s: Indexing,
    progress: Progress | None = None,
) -> list[EdgeSpec]:
    """For each new chunk, edges both ways to its ``similar_k`` most similar chunks in
    other files whose cosine reaches ``similar_min``.

    A file with many new chunks (a long file cut by the chunk cap) is compared with the
    other files' chunks only, so its own chunks cost neither time nor memory."""
    if not len(new_ids) or not len(all_ids) or s.similar_k <= 0:
        return []
    files = sorted(set(file_of.values()))
    fidx = {f: i for i, f in enumerate(files)}
    all_f = np.array([fidx[file_of[i]] for i in all_ids], dtype=np.int32)
    new_f = np.array([fidx[file_of[i]] for i in new_ids], dtype=np.int32)
    counts = np.bincount(new_f, minlength=len(files))
    big = [f for f in range(len(files)) if counts[f] >= _SIM_BLOCK]
    groups: list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp] | None]] = [
        (np.flatnonzero(new_f == f), np.flatnonzero(all_f != f)) for f in big
    ]
    groups.append((np.flatnonzero(~np.isin(new_f, big)), None))
    pairs: dict[tuple[str, str], float] = {}
    done = 0
    for rows, cols in groups:
        vecs = all_vecs if cols is None else all_vecs[cols]
        for start in range(0, len(rows) if len(vecs) else 0, _SIM_BLOCK):
            block = rows[start : start + _SIM_BLOCK]
            sims: npt.NDArray[np.float32] = new_vecs[block] @ vecs.T
            if cols is None:
                sims[new_f[block][:, None] == all_f[None, :]] = -np.inf
            _nearest(sims, [new_ids[r] for r in block], all_ids, cols, s, pairs)
            if progress:
                progress("connect", done + min(start + _SIM_BLOCK, len(rows)), len(new_ids))
        done += len(rows)
    span = max(1e-9, 1.0 - s.similar_min)
    lo, hi = s.similar_weight_low, s.similar_weight_high
    return [
        EdgeSpec(
            source=a,
            target=b,
            weight=round(lo + (hi - lo) * (c - s.similar_min) / span, 6),
            kind="similar",
        )
        for (a, b), c in sorted(pairs.items())
        if not existing(a, b)
    ]


def _nearest(
    sims: npt.NDArray[np.float32],
    sources: list[str],
    all_ids: Sequence[str],
    cols: npt.NDArray[np.intp] | None,
    s: Indexing,
    pairs: dict[tuple[str, str], float],
) -> None:
    """Add each source's ``similar_k`` best columns of ``sims`` that reach
    ``similar_min`` to ``pairs`` (column j is ``all_ids[cols[j]]``, or ``all_ids[j]``)."""
    k = min(s.similar_k, sims.shape[1])
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    for r, js in enumerate(top):
        a = sources[r]
        for j in sorted(js.tolist(), key=lambda j: (-sims[r, j], j)):
            cos = float(sims[r, j])
            if cos >= s.similar_min:
                b = all_ids[j if cols is None else int(cols[j])]
                for key in ((a, b), (b, a)):
                    pairs[key] = max(pairs.get(key, -1.0), cos)


def decide_sync(
    graph: State,
    embedder_id: str,
    files: Sequence[FileText],
    skipped: Sequence[Skipped],
    embedder: Embedder,
    existing_vectors: Callable[[list[str]], Matrix],
    s: Indexing,
    *,
    root: str,
    progress: Progress | None = None,
    scope: frozenset[str] | None = None,
    held: frozenset[str] = frozenset(),
    carry: Carry | None = None,
) -> SyncPlan:
    """Everything a sync records: attach, embedder, file events, vectors, edges. With
    ``scope``, only the files at those paths are decided (a file of the scope missing
    from ``files`` is gone); the others are left as they are, and so are the ``held``
    ones (named with a secret, see ``ocb.graph.names``)."""
    plan = SyncPlan(skipped=list(skipped))
    if not graph.workspace:
        plan.events.append(WorkspaceAttached(root=root))
    if not embedder_id:
        spec = embedder_spec(embedder)
        plan.events.append(EmbedderConfigured(embedder_id=embedder.id, dim=embedder.dim, spec=spec))
    keep = frozenset(sk.path for sk in skipped if sk.path in graph.files) | held
    previous = previous_files(graph, scope)
    file_events = diff_workspace(
        files,
        previous,
        keep=keep,
        target_chars=s.chunk_chars,
        max_chars=s.max_chunk_chars,
        taken=graph.nodes,
    )
    if carry is not None:
        file_events = carry.chunks(graph, file_events)
    plan.events.extend(file_events)
    _count(plan.report, file_events)
    new = _new_chunks(file_events)
    new_vecs = _embed(new, embedder, plan, progress)
    edges = sibling_edges(graph, file_events, s)
    taken = {(e.source, e.target) for e in edges}
    edges += _similar(graph, file_events, new, new_vecs, existing_vectors, s, taken, progress)
    if edges:
        plan.events.append(EdgesCreated(edges=tuple(edges), cause="sync"))
    plan.report.edges_created = len(edges)
    return plan


def _count(r: SyncReport, file_events: Sequence[Event]) -> None:
    """The summary of a sync's file events."""
    for ev in file_events:
        if isinstance(ev, FileIndexed):
            r.files_indexed += 1
            r.chunks_added += len(ev.chunks)
        elif isinstance(ev, FileChanged):
            r.files_changed += 1
            r.chunks_added += len(ev.added)
            r.chunks_revised += len(ev.revised)
            r.chunks_removed += len(ev.removed)
        elif isinstance(ev, FileMoved):
            r.files_moved += 1
        elif isinstance(ev, FileRemoved):
            r.files_removed += 1
            r.chunks_removed += len(ev.removed)


def _embed(
    new: list[tuple[str, ChunkText]], embedder: Embedder, plan: SyncPlan, progress: Progress | None
) -> Matrix:
    parts: list[Matrix] = []
    for start in range(0, len(new), EMBED_BATCH):
        batch = new[start : start + EMBED_BATCH]
        texts = [chunk_input(c.heading, c.text) for _, c in batch]
        m = embedder.embed(texts)
        parts.append(m)
        data = pack_matrix(m)
        plan.blobs.append(data)
        plan.events.append(
            NodesEmbedded(
                embedder_id=embedder.id,
                blob=sha256(data).hexdigest(),
                node_ids=tuple(c.id for _, c in batch),
            )
        )
        if progress:
            progress("embed", min(start + EMBED_BATCH, len(new)), len(new))
    if not parts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.vstack(parts)


def _similar(
    graph: State,
    file_events: Sequence[Event],
    new: list[tuple[str, ChunkText]],
    new_vecs: Matrix,
    existing_vectors: Callable[[list[str]], Matrix],
    s: Indexing,
    taken: set[tuple[str, str]],
    progress: Progress | None,
) -> list[EdgeSpec]:
    # the removed chunks, and the revised ones: their new vectors are among the new
    gone = {
        i for ev in file_events if isinstance(ev, (FileChanged, FileRemoved)) for i in ev.removed
    } | {c.id for _, c in new}
    old_ids = sorted(i for i, n in graph.nodes.items() if n.kind == CHUNK and i not in gone)
    file_of = {i: graph.nodes[i].path for i in old_ids}
    file_of.update({c.id: path for path, c in new})
    new_ids = [c.id for _, c in new]
    old_vecs = (
        existing_vectors(old_ids)
        if old_ids and new_ids
        else np.zeros((0, new_vecs.shape[1]), np.float32)
    )
    all_ids = old_ids + new_ids
    all_vecs = np.vstack([old_vecs, new_vecs]) if len(old_ids) else new_vecs

    def exists(a: str, b: str) -> bool:
        return (a, b) in taken or b in graph.out.get(a, {})

    return similar_edges(new_ids, new_vecs, all_ids, all_vecs, file_of, exists, s, progress)


def changed_on_disk(
    root: Path, events: Sequence[Event], *, max_bytes: int = MAX_FILE_BYTES
) -> list[str]:
    """Files whose events were decided from content that is no longer on disk (the
    last content hash a path's events name: a moved and edited file's ``FileMoved``
    names the content it had before the edit)."""
    last: dict[str, str] = {}
    for ev in events:
        if isinstance(ev, (FileIndexed, FileChanged, FileMoved, FactsRecorded)) and ev.content_hash:
            last[ev.path] = ev.content_hash
    moved = []
    for path, content_hash in last.items():
        now = read_text(root, path, max_bytes=max_bytes)
        if not isinstance(now, FileText) or now.content_hash != content_hash:
            moved.append(path)
    return moved


def plan_sync(
    graph: State,
    embedder_id: str,
    mem: MemoryState,
    embedder: Embedder,
    existing_vectors: Callable[[list[str]], Matrix],
    s: Indexing,
    files: Sequence[FileText],
    skipped: Sequence[Skipped],
    *,
    root: str,
    cause: str = "sync",
    progress: Progress | None = None,
    secrets: Scanner | None = None,
    scope: frozenset[str] | None = None,
    carry: Carry | None = None,
) -> tuple[SyncPlan, list[Problem]]:
    """A sync's chunk events (``decide_sync``) followed by the facts of the Markdown
    files that changed, and the fact bullets that were skipped. With ``secrets``, every
    file is redacted first, so chunk texts, headings, facts and vectors never see a
    secret; the content hash stays that of the file on disk."""
    found: dict[str, tuple[Finding, ...]] = {}
    held: frozenset[str] = frozenset()
    if secrets is not None:
        if not graph.workspace:
            check_root(root, secrets)
        known = {*graph.files, *mem.files}
        files, skipped, held = secret_paths(files, skipped, known, secrets, scope)
        files, found = _redact_new(graph, mem, files, secrets)
    plan = decide_sync(
        graph, embedder_id, files, skipped, embedder, existing_vectors, s,
        root=root, progress=progress, scope=scope, held=held, carry=carry,
    )  # fmt: skip
    changed = frozenset(
        e.path for e in plan.events if isinstance(e, (FileIndexed, FileChanged, FileMoved))
    )
    moves = [e for e in plan.events if isinstance(e, FileMoved)]
    previous = _previous_facts(mem, moves, scope)
    if carry is not None:
        previous = carry.facts(previous)
    facts, problems = diff_facts(
        files,
        previous,
        mem.next_fact,
        changed=changed,
        keep=frozenset(sk.path for sk in skipped) | held,
        cause=cause,
    )
    plan.events.extend(facts)
    recorded = {e.path for e in plan.events if isinstance(e, (FileIndexed, FileChanged))}
    recorded |= {e.path for e in facts}
    plan.secrets = [(p, f) for p in sorted(found) if p in recorded for f in found[p]]
    return plan, problems


def _previous_facts(
    mem: MemoryState, moves: Sequence[FileMoved], scope: frozenset[str] | None
) -> dict[str, PreviousFacts]:
    """The facts the brain holds of each file (of ``scope``), and of each moved file at
    its new path too (with no content hash, so they are read again there and keep their
    ids; the old path then retires none of them, as they are in another file)."""
    previous = {
        path: PreviousFacts(ff.content_hash, tuple(spec_of(mem.facts[i]) for i in ff.ids))
        for path, ff in mem.files.items()
        if scope is None or path in scope
    }
    for ev in moves:
        prev = previous.get(ev.old_path)
        if prev is not None and ev.path not in previous:
            previous[ev.path] = PreviousFacts("", prev.facts)
    return previous


def _redact_new(
    graph: State, mem: MemoryState, files: Sequence[FileText], secrets: Scanner
) -> tuple[list[FileText], dict[str, tuple[Finding, ...]]]:
    """``redact_files`` of the files a sync may record: a file whose content hash the
    graph and the typed memory already hold records nothing (``decide_sync`` and
    ``diff_facts`` skip it), so it is not scanned again."""

    def recorded_as_is(f: FileText) -> bool:
        g, m = graph.files.get(f.path), mem.files.get(f.path)
        if g is None or g.content_hash != f.content_hash:
            return False
        return m.content_hash == f.content_hash if m is not None else bool(mem.files)

    new = [f for f in files if not recorded_as_is(f)]
    scanned, found = redact_files(new, secrets)
    by_path = {f.path: f for f in scanned}
    return [by_path.get(f.path, f) for f in files], found


# --------------------------------------------------------------------------- on a store


def scan(root: Path, *, has_files: bool, max_bytes: int = MAX_FILE_BYTES) -> Scanned:
    """The indexable files of a workspace and the ones skipped, with why.

    Raises:
        WorkspaceError: missing, not a directory, or (unless the brain ``has_files``
            already) without any indexable file.
    """
    files, skipped = scan_workspace(root, max_bytes=max_bytes)
    if not files and not has_files:
        reason = f" ({len(skipped)} skipped)" if skipped else ""
        raise WorkspaceError(
            f"workspace {root} holds no Markdown or text files{reason}",
            "point --workspace at the directory with your .md notes",
        )
    return files, skipped


def sync(
    store: Store,
    workspace: str | Path,
    *,
    progress: Progress | None = None,
    scanned: Scanned | None = None,
    cause: str = "sync",
    paths: Collection[str] | None = None,
    embedded: MutableMapping[str, npt.NDArray[np.float32]] | None = None,
    actor: str = "",
    carry: Carry | None = None,
) -> SyncReport:
    """Index a workspace or bring the brain up to date with it, and record the sync
    (see ``Brain.sync``) as ``actor`` (default: ``sync``); with ``paths``, only the
    files at those workspace-relative paths (a directory among them: the files under
    it). ``embedded`` holds vectors of chunk texts (``chunk_input``) embedded ahead,
    taken (and dropped from it) instead of embedding them. ``carry`` keeps the identity
    of text moved between files (see ``Carry``).

    Raises:
        WorkspaceError: missing, not a directory, without any indexable file, or a
            file kept changing while it was read.
        BrainExists: the brain belongs to another workspace.
    """
    root = Path(workspace)
    who = actor_of(actor) if actor else "sync"
    store.load("config", "graph", "vectors", "memory")
    g = store.graph
    root_s = str(root.resolve())
    if store.workspace and store.workspace != root_s:  # a shared log: this copy's
        raise BrainExists(store.path, store.workspace, root_s)

    limit = store.setting(Indexing).max_file_bytes

    def read() -> tuple[list[FileText], list[Skipped], frozenset[str] | None]:
        if paths is None:
            return (*scan(root, has_files=bool(g.files), max_bytes=limit), None)
        known = sorted({*g.files, *store.state("memory").files})
        return scan_paths(root, paths, known, max_bytes=limit)

    if limit != MAX_FILE_BYTES:
        scanned = None  # read before the brain's settings were known, at the default limit
    files, skipped, scope = read() if scanned is None else (*scanned, None)
    emb = store.embedder() if not embedded else Ahead(store.embedder(), embedded)
    plans: list[tuple[SyncPlan, list[Problem]]] = []
    warned: set[str] = set()  # by an earlier decision of this sync: not again

    def decide(_seq: int) -> Decision:
        scan = (files, skipped, scope)
        plans.append(_settled_plan(store, root, scan, read, cause, progress, emb, carry))
        plan, problems = plans[-1]
        said: list[str] = []
        for sk in plan.skipped:  # paths named with a secret shown redacted
            said.append(f"skipped {sk.path}: {sk.reason}")
        said += [f"skipped fact at {p}" for p in problems]
        for path, found in plan.secrets:
            warn_file(said.append, path, [found], "before recording (the file is unchanged)")
        for msg in said:
            if msg not in warned:
                store.warn(msg)
        warned.update(said)
        return Decision(plan.events, plan.blobs)

    store.transact(who, decide)
    plan, problems = plans[-1]
    if plan.bases is not None:  # a shared log: what this copy now agrees with
        write_bases(store.path, plan.bases)
    store.search_index()
    store.save_snapshots(force=bool(plan.events) and paths is None)
    return _report(store, plan, problems)


Read = Callable[[], tuple[list[FileText], list[Skipped], frozenset[str] | None]]


def _settled_plan(
    store: Store,
    root: Path,
    scanned: tuple[list[FileText], list[Skipped], frozenset[str] | None],
    read: Read,
    cause: str,
    progress: Progress | None,
    embedder: Embedder,
    carry: Carry | None = None,
) -> tuple[SyncPlan, list[Problem]]:
    """The plan of a sync, decided again (three tries) while a file it read changes on
    disk, so that what is recorded always matches one version of every file.

    Raises:
        WorkspaceError: a file kept changing.
    """
    files, skipped, scope = scanned
    root_s = str(root.resolve())
    attempt = 0
    while True:
        ix = store.setting(Indexing)
        copy = screen_copy(store, files, skipped, scope)
        mine, left = (copy.files, copy.skipped) if copy is not None else (files, skipped)
        plan, problems = plan_sync(
            store.graph, store.state("vectors").embedder_id, store.state("memory"),
            embedder, store.vectors_of, ix, mine, left,
            root=root_s, cause=cause, progress=progress, secrets=store.secrets(), scope=scope,
            carry=carry,
        )  # fmt: skip
        plan.bases = copy.bases if copy is not None else None
        moved = changed_on_disk(root, plan.events, max_bytes=ix.max_file_bytes)
        if not moved:
            return plan, problems
        attempt += 1
        if attempt == 3:
            raise WorkspaceError(
                f"{moved[0]} kept changing while the sync read it; nothing was recorded",
                "let the writer finish, then run the sync again",
            )
        files, skipped, scope = read()


def _report(store: Store, plan: SyncPlan, problems: list[Problem]) -> SyncReport:
    """The plan's summary, completed with what was recorded and the brain it left."""
    g = store.graph
    return msgspec.structs.replace(
        plan.report,
        events=len(plan.events),
        nodes=len(g.nodes),
        edges=g.edge_count(),
        skipped=[(s.path, s.reason) for s in plan.skipped],
        facts=store.state("memory").size,
        fact_files=sum(isinstance(e, FactsRecorded) for e in plan.events),
        fact_problems=[str(p) for p in problems],
        secrets=[(path, f.line, f.end_line, f.kind) for path, f in plan.secrets],
    )
