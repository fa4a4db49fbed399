"""Settings of traversal and learning: defaults, overridden by recorded config
(``ocb config set traversal.max_hops 4``) and then by per-call options."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from ocb_events.errors import InputError

ROUTE_MODES = ("edge", "edge+sim", "learned")
RULES = ("pg", "heuristic")
REWARD_SOURCES = ("human", "self", "harvester", "teacher")


class Traversal(msgspec.Struct, frozen=True):
    """How a query seeds and walks the graph (see ``ocb.traverse``).

    Tiers (on the damped weight): reflex >= ``reflex`` is followed automatically;
    habitual in [``habitual``, ``reflex``) is chosen by the route policy, a softmax over
    the candidates and STOP at temperature ``tau``; below ``habitual`` is dormant and
    skipped; <= ``inhibitory`` vetoes its target. A target receives its source's
    activation times the policy's probability of moving there and fires when that
    reaches ``fire_threshold`` (at most ``branch`` habitual targets per node). A target
    that already fired has ``visit_penalty`` taken off its logit. Seeds are the best
    ``max_seeds`` hybrid matches scoring at least ``seed_ratio`` of the best.
    """

    mode: str = "edge"
    max_hops: int = 3
    max_fired: int = 30
    max_context_chars: int = 6000
    max_seeds: int = 4
    seed_ratio: float = 0.5
    lexical_weight: float = 0.6
    tau: float = 1.0
    damping: float = 0.3
    reflex: float = 0.6
    habitual: float = 0.2
    inhibitory: float = -0.01
    alpha: float = 0.3
    fire_threshold: float = 0.05
    branch: int = 3
    visit_penalty: float = 0.2


class Learning(msgspec.Struct, frozen=True):
    """How outcomes change edges: learning rate, discount, the rate of the per-node
    reward baselines (0 turns them off), and the weight of each reward source. The
    policy gradient uses the temperature of the traversal that made the trace
    (``traversal.tau``)."""

    rule: str = "pg"
    eta: float = 0.1
    gamma: float = 0.9
    baseline_rate: float = 0.05
    weight_human: float = 1.0
    weight_self: float = 0.6
    weight_harvester: float = 0.3
    weight_teacher: float = 0.1

    def source_weight(self, source: str) -> float:
        value: float = getattr(self, f"weight_{source}")
        return value


class Indexing(msgspec.Struct, frozen=True):
    """How init connects chunks: sibling edges inside a file and a few cross-file
    edges between similar chunks. A correction given only a chat or a trace vetoes the
    chunks whose opposition to it reaches ``correction_min_similarity`` (see
    ``ocb.stance``)."""

    chunk_chars: int = 600
    sibling_weight: float = 0.3
    similar_k: int = 2
    similar_min: float = 0.35
    similar_weight_low: float = 0.2
    similar_weight_high: float = 0.4
    connect_k: int = 3
    inject_weight: float = 0.5
    correction_weight: float = -1.0
    correction_min_similarity: float = 0.85


class Maintenance(msgspec.Struct, frozen=True):
    """How ``ocb maintain`` changes the graph (see ``ocb.maintenance``).

    Decay halves edge weights every ``half_life_days`` (canonical nodes at half the
    rate); prune removes edges with ``|w| < prune_below``; merge joins chunks whose
    vectors reach ``merge_min_similarity`` and that fired together in every one of the
    last ``merge_window`` traces where either fired, at least ``merge_min_cofires``
    times; split cuts chunks longer than ``split_over_chars`` into pieces of about
    ``split_chars``; connect links a node without edges to its ``connect_k`` most similar
    chunks at ``connect_weight``; scale shrinks a node's positive outgoing weights to sum
    to at most ``budget``.
    """

    half_life_days: float = 30.0
    prune_below: float = 0.02
    merge_min_similarity: float = 0.95
    merge_min_cofires: int = 3
    merge_window: int = 1000
    split_over_chars: int = 2000
    split_chars: int = 600
    connect_k: int = 3
    connect_weight: float = 0.3
    budget: float = 3.0


class Storage(msgspec.Struct, frozen=True):
    """How a brain keeps its derived data: a snapshot when ``snapshot_tail`` records
    have piled up since the last one, and a checkpoint kept for time travel in every
    interval of ``checkpoint_every`` records."""

    checkpoint_every: int = 10_000
    snapshot_tail: int = 500


class Memory(msgspec.Struct, frozen=True):
    """How recall scores and spreads (see ``ocb.recall``).

    Score = ``w_match`` * match + ``w_salience`` * salience + ``w_access`` * access, where
    access = 0.5 ** (days since last recall / ``half_life_days``) * (1 + ``access_boost``
    * ln(1 + recalls)) and a fact never recalled has ``never_accessed``. Match mixes
    BM25 (``lexical_weight``) and cosine; facts matching at least ``match_ratio`` of the
    best match rank before the rest, so salience and recency order relevant facts
    rather than lift weak matches over strong ones. Associative recall passes activation over
    entity co-occurrence (IDF-weighted), times ``hop_decay`` per hop, drops entities
    below ``min_activation`` and keeps at most ``max_active_entities``. A bundle holds
    at most ``max_chars`` characters; "around DATE" means +- ``around_days``. A current
    fact older than ``stale_days`` is returned with a caveat.
    """

    w_match: float = 0.4
    w_salience: float = 0.35
    w_access: float = 0.25
    half_life_days: float = 7.0
    access_boost: float = 0.1
    never_accessed: float = 0.25
    lexical_weight: float = 0.6
    match_ratio: float = 0.5
    hop_decay: float = 0.5
    min_activation: float = 0.1
    max_active_entities: int = 20
    max_chars: int = 2000
    around_days: int = 3
    stale_days: float = 30.0


S = TypeVar("S", Traversal, Learning, Indexing, Maintenance, Storage, Memory)

SECTIONS: dict[str, type[Any]] = {
    "traversal": Traversal,
    "learning": Learning,
    "indexing": Indexing,
    "maintenance": Maintenance,
    "storage": Storage,
    "memory": Memory,
}


def _coerce(section: str, name: str, kind: type, value: object) -> object:
    try:
        if kind is int:
            out: object = int(value)  # type: ignore[call-overload]
        elif kind is float:
            number = float(value)  # type: ignore[arg-type]
            if not math.isfinite(number):
                raise ValueError
            out = number
        else:
            out = str(value)
    except (TypeError, ValueError):
        raise InputError(
            f"{section}.{name} must be a finite {kind.__name__}, got {value!r}",
            "give a finite number, e.g. 3",
        ) from None
    if section == "traversal" and name == "mode" and out not in ROUTE_MODES:
        raise InputError(f"unknown route mode {out!r}", f"use one of: {', '.join(ROUTE_MODES)}")
    if section == "learning" and name == "rule" and out not in RULES:
        raise InputError(f"unknown learning rule {out!r}", f"use one of: {', '.join(RULES)}")
    return out


_LOWEST: dict[str, tuple[float, bool]] = {
    "traversal.tau": (0.0, False),
    "traversal.max_hops": (0, True),
    "traversal.max_fired": (1, True),
    "traversal.max_context_chars": (1, True),
    "traversal.max_seeds": (1, True),
    "traversal.seed_ratio": (0.0, True),
    "traversal.lexical_weight": (0.0, True),
    "traversal.damping": (0.0, False),
    "traversal.fire_threshold": (0.0, True),
    "traversal.branch": (0, True),
    "traversal.visit_penalty": (0.0, True),
    "traversal.alpha": (0.0, True),
    "learning.eta": (0.0, True),
    "learning.gamma": (0.0, True),
    "learning.baseline_rate": (0.0, True),
    "learning.weight_human": (0.0, True),
    "learning.weight_self": (0.0, True),
    "learning.weight_harvester": (0.0, True),
    "learning.weight_teacher": (0.0, True),
    "indexing.chunk_chars": (1, True),
    "indexing.similar_k": (0, True),
    "indexing.connect_k": (0, True),
    "indexing.correction_min_similarity": (0.0, False),
    "storage.checkpoint_every": (1, True),
    "storage.snapshot_tail": (1, True),
    "maintenance.half_life_days": (0.0, False),
    "maintenance.prune_below": (0.0, True),
    "maintenance.merge_min_similarity": (0.0, False),
    "maintenance.merge_min_cofires": (1, True),
    "maintenance.merge_window": (1, True),
    "maintenance.split_over_chars": (1, True),
    "maintenance.split_chars": (1, True),
    "maintenance.connect_k": (0, True),
    "maintenance.connect_weight": (0.0, False),
    "maintenance.budget": (0.0, False),
    "memory.w_match": (0.0, True),
    "memory.w_salience": (0.0, True),
    "memory.w_access": (0.0, True),
    "memory.half_life_days": (0.0, False),
    "memory.access_boost": (0.0, True),
    "memory.never_accessed": (0.0, True),
    "memory.lexical_weight": (0.0, True),
    "memory.hop_decay": (0.0, True),
    "memory.match_ratio": (0.0, True),
    "memory.min_activation": (0.0, True),
    "memory.max_active_entities": (1, True),
    "memory.max_chars": (1, True),
    "memory.around_days": (0, True),
    "memory.stale_days": (0.0, False),
}
"""Settings with a lower bound: (bound, whether the bound itself is allowed)."""

_HIGHEST: dict[str, float] = {
    "traversal.seed_ratio": 1.0,
    "traversal.lexical_weight": 1.0,
    "traversal.damping": 1.0,
    "traversal.reflex": 1.0,
    "traversal.inhibitory": 0.0,
    "learning.gamma": 1.0,
    "learning.baseline_rate": 1.0,
    "indexing.correction_min_similarity": 1.0,
    "maintenance.prune_below": 1.0,
    "maintenance.merge_min_similarity": 1.0,
    "maintenance.connect_weight": 1.0,
    "memory.lexical_weight": 1.0,
    "memory.hop_decay": 1.0,
    "memory.match_ratio": 1.0,
    "memory.never_accessed": 1.0,
}


def _check_range(key: str, value: object) -> None:
    low, high = _LOWEST.get(key), _HIGHEST.get(key)
    if not isinstance(value, (int, float)) or (low is None and high is None):
        return
    too_low = low is not None and (value < low[0] or (value == low[0] and not low[1]))
    if not too_low and (high is None or value <= high):
        return
    parts = []
    if low is not None:
        parts.append(f"{'at least' if low[1] else 'above'} {low[0]:g}")
    if high is not None:
        parts.append(f"at most {high:g}")
    section, _, name = key.partition(".")
    default = getattr(SECTIONS[section](), name)
    raise InputError(
        f"{key} must be {' and '.join(parts)}, got {value:g}",
        f"give a value {' and '.join(parts)}, e.g. {default:g} (the default)",
    )


def check_key(key: str, value: object) -> object:
    """Validate a ``section.name`` setting and coerce its value.

    Raises:
        InputError: unknown key, a value of the wrong kind, or out of its range.
    """
    section, _, name = key.partition(".")
    cls = SECTIONS.get(section)
    known = {f.name: f for f in msgspec.structs.fields(cls)} if cls else {}
    if name not in known:
        keys = sorted(
            f"{s}.{f.name}" for s, c in SECTIONS.items() for f in msgspec.structs.fields(c)
        )
        raise InputError(f"unknown setting {key!r}", "known settings: " + ", ".join(keys))
    assert cls is not None
    kind = type(getattr(cls(), name))
    out = _coerce(section, name, kind, value)
    _check_range(key, out)
    return out


def resolve(cls: type[S], recorded: Mapping[str, object], **overrides: object) -> S:
    """Defaults of ``cls``, then recorded config, then non-None ``overrides``."""
    section = next(k for k, v in SECTIONS.items() if v is cls)
    base = cls()
    changes: dict[str, object] = {}
    for key, value in recorded.items():
        sec, _, name = key.partition(".")
        if sec == section and hasattr(base, name):
            changes[name] = value
    for name, value in overrides.items():
        if value is not None:
            changes[name] = check_key(f"{section}.{name}", value)
    return msgspec.structs.replace(base, **changes)
