"""Health checks of a brain, each with a clear pass / warn / fail line."""

from __future__ import annotations

import math
from pathlib import Path

from ocb.checks.memory import MEMORY_CHECKS, memory_checks
from ocb.checks.private import privacy_check
from ocb.engine.embed import unpack_matrix
from ocb.engine.policy import tiers
from ocb.settings import Memory, Traversal, resolve
from ocb.shared_log import location, verify_shared
from ocb.store import Store
from ocb.upkeep.blobs import ROUTE_MODEL, BlobReport, find_lost, regenerate_blobs
from ocb_events.errors import InputError, LogError, OcbError
from ocb_events.log import verify_log
from projections import PROJECTIONS
from projections.graph import CHUNK, State as GraphState
from projections.tiers import DORMANT_LIMIT, tier_counts, tier_shares
from replay import rebuild
from replay.verify import (
    FAIL,
    PASS,
    SKIP,
    WARN,
    Check,
)


def _log_check(path: Path) -> Check:
    if location(path) is not None:
        try:
            return Check("log integrity", PASS, verify_shared(path)[1])
        except OcbError as exc:
            return Check("log integrity", FAIL, exc.message)
    try:
        reports = verify_log(path / "log")
    except OcbError as exc:
        return Check("log integrity", FAIL, exc.message)
    n = sum(r.records for r in reports)
    return Check(
        "log integrity",
        PASS,
        f"{n} records in {len(reports)} segment(s): checksums, seqs, chain ok",
    )


def _rebuild_check(store: Store) -> Check:
    full = rebuild(store.log, to_seq=store.horizon)
    bad = [
        name
        for name in sorted(PROJECTIONS)
        if PROJECTIONS[name].snapshot(store.state(name)) != PROJECTIONS[name].snapshot(full[name])
    ]
    if bad:
        return Check(
            "projections match rebuild", FAIL, "differ from a full rebuild: " + ", ".join(bad)
        )
    return Check(
        "projections match rebuild",
        PASS,
        f"{len(PROJECTIONS)} projections equal a full rebuild at seq {store.horizon}",
    )


def _embedder_check(store: Store) -> Check:
    vec = store.state("vectors")
    g: GraphState = store.graph
    if not g.nodes:
        return Check("embedder consistency", PASS, "no nodes yet")
    try:
        emb = store.embedder()
    except OcbError as exc:
        return Check("embedder consistency", FAIL, exc.message)
    missing = sorted(n for n in g.nodes if n not in vec.rows)
    problems: list[str] = []
    for blob in sorted({r.blob for r in vec.rows.values()}):
        try:
            m = unpack_matrix(store.blobs.get(blob, verify=True))
        except (OcbError, ValueError) as exc:
            problems.append(str(exc))
            continue
        if m.shape[1] != emb.dim:
            problems.append(f"blob {blob[:12]} has dim {m.shape[1]}, not {emb.dim}")
    if missing or problems:
        parts = [f"{len(missing)} node(s) without a vector (e.g. {missing[0]})"] if missing else []
        return Check("embedder consistency", FAIL, "; ".join(parts + problems[:3]))
    return Check(
        "embedder consistency", PASS, f"{len(vec.rows)} vectors from {emb.id}, blobs intact"
    )


def _blob_check(store: Store) -> Check:
    """Every blob the log names is present and matches its hash. Lost vector blobs fail
    (``ocb doctor --repair`` regenerates them); a lost route model warns (the learned
    route mode falls back to edge+sim; ``ocb train-route`` fixes it)."""
    report = find_lost(store.log, store.blobs, to_seq=store.horizon)
    if not report.lost:
        return Check("blobs", PASS, f"{report.named} blob(s) named by the log, all intact")
    vectors = [b for b in report.lost if b.kind != ROUTE_MODEL]
    models = [b for b in report.lost if b.kind == ROUTE_MODEL]
    parts = []
    if vectors:
        b = vectors[0]
        parts.append(
            f"{len(vectors)} vector blob(s) lost (e.g. {b.blob[:12]} of seq {b.seq} {b.detail}); "
            "fix: ocb doctor --repair re-embeds them"
        )
    if models:
        b = models[0]
        parts.append(
            f"{len(models)} route model blob(s) lost (e.g. {b.blob[:12]} of seq {b.seq}): "
            "the learned route mode routes with edge+sim; fix: ocb train-route"
        )
    return Check("blobs", FAIL if vectors else WARN, "; ".join(parts))


def repair_blobs(path: str | Path) -> BlobReport:
    """Regenerate the lost vector blobs of the brain at ``path`` (see
    ``ocb.upkeep.blobs``); nothing is recorded, so no write lock is taken.

    Raises:
        BrainNotFound: no brain at ``path``.
    """
    with Store(path, writer=False) as store:
        return regenerate_blobs(store)


def _orphan_check(g: GraphState) -> Check:
    bad = [(s, t) for s, ts in g.out.items() for t in ts if s not in g.nodes or t not in g.nodes]
    if bad:
        return Check(
            "orphan edges",
            FAIL,
            f"{len(bad)} edge(s) with a missing endpoint, e.g. {bad[0][0]} -> {bad[0][1]}",
        )
    return Check("orphan edges", PASS, "every edge joins two existing nodes")


def _bounds_check(g: GraphState) -> Check:
    ws = [e.weight for ts in g.out.values() for e in ts.values()] + list(g.stop.values())
    bad = [w for w in ws if not (math.isfinite(w) and -1.0 <= w <= 1.0)]
    if bad:
        return Check("weight bounds", FAIL, f"{len(bad)} weight(s) outside [-1, 1], e.g. {bad[0]}")
    return Check("weight bounds", PASS, f"{len(ws)} weights within [-1, 1]")


def _tier_check(store: Store) -> Check:
    trav = resolve(Traversal, store.state("config").values)
    shares = tier_shares(tier_counts(store.graph, tiers(trav)))
    detail = ", ".join(f"{k} {v:.1%}" for k, v in shares.items())
    if shares["dormant"] > DORMANT_LIMIT:
        over = f" (over {DORMANT_LIMIT:.0%} dormant: routing has died)"
        return Check("tier distribution", WARN, detail + over)
    return Check("tier distribution", PASS, detail)


def _injected_check(g: GraphState) -> Check:
    inc: set[str] = {t for ts in g.out.values() for t in ts}
    injected = sorted(n for n, node in g.nodes.items() if node.kind != CHUNK)
    lonely = [n for n in injected if not g.out.get(n) and n not in inc]
    if lonely:
        return Check(
            "injected nodes connected",
            FAIL,
            f"{len(lonely)} without edges: {', '.join(lonely[:5])}",
        )
    return Check(
        "injected nodes connected", PASS, f"{len(injected)} injected node(s), all connected"
    )


def _memory_checks(store: Store) -> list[Check]:
    store.load("memory", "config")
    s = resolve(Memory, store.state("config").values)
    return memory_checks(store.state("memory"), s, store.now())


_LOG_DEPENDENT = (
    "projections match rebuild",
    "embedder consistency",
    "blobs",
    "orphan edges",
    "weight bounds",
    "tier distribution",
    "injected nodes connected",
    *MEMORY_CHECKS,
)


def run_doctor(path: str | Path, as_of: int | str | None = None) -> list[Check]:
    """Every check of the brain at ``path``; a damaged log fails its check and skips
    the checks that need it.

    Raises:
        BrainNotFound: no brain at ``path``.
    """
    path = Path(path)
    log_check = _log_check(path)
    try:
        store = Store(path, writer=False, as_of=as_of)
    except LogError as exc:
        failed = (
            log_check if log_check.status == FAIL else Check("log integrity", FAIL, exc.message)
        )
        return [failed] + [Check(n, SKIP, "the log is unreadable") for n in _LOG_DEPENDENT]
    try:
        checks = [log_check, privacy_check(path)]
        if store.recovery is not None:
            r = store.recovery
            checks.append(
                Check(
                    "torn tail",
                    WARN,
                    f"{r.dropped_bytes} bytes after seq {r.last_seq} in {r.segment}; "
                    "repaired on the next write",
                )
            )
        if checks[0].status == FAIL:
            return checks + [Check(n, SKIP, "the log is unreadable") for n in _LOG_DEPENDENT]
        g = store.graph
        checks += [
            _rebuild_check(store),
            _embedder_check(store),
            _blob_check(store),
            _orphan_check(g),
            _bounds_check(g),
        ]
        checks += [_tier_check(store), _injected_check(g)]
        return checks + _memory_checks(store)
    finally:
        store.close()


def doctor(
    path: str | Path, *, repair: bool = False, as_of: int | str | None = None
) -> tuple[list[Check], BlobReport | None]:
    """Every check of the brain at ``path`` (see ``run_doctor``), after regenerating its
    lost vector blobs with ``repair`` (None without it). A damaged log skips the repair:
    its check fails and names the log's own repair.

    Raises:
        InputError: ``repair`` with ``as_of`` (the repair mends the brain as it is now).
        BrainNotFound: no brain at ``path``.
    """
    if repair and as_of is not None:
        raise InputError(
            "`repair` mends the brain as it is now", "drop `as_of`", param=("repair", "as_of")
        )
    fixed = None
    if repair:
        try:
            fixed = repair_blobs(path)
        except LogError:
            pass  # a damaged log: the doctor's report says so and names its repair
    return run_doctor(path, as_of=as_of), fixed
