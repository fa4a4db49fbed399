"""Settings: defaults, overridden by recorded config (``ocb config traversal.max_hops 4``)
and then by per-call options.

Each section is a Struct in ``SECTIONS``; each field declares its type, default,
bounds (``msgspec.Meta`` ``ge``/``gt``/``le``/``lt``), choices (a ``Literal``) and a
one-line description. ``registry()`` is derived from them and is the one place that
knows a key: ``check_key`` validates a value, ``in_force`` and ``resolve`` read the
recorded config, and ``ocb config`` lists, reads and records through it. A new
section needs only its Struct and its entry in ``SECTIONS``. A key's entry (``Setting``)
and the checks of a value live in ``ocb.setting_checks``.

NOTE: every field is ``Annotated[<int | float | str | bool | Literal>, Meta(...)]``
with a description; a field of any other type is refused when the module loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar, get_args

import msgspec
from msgspec import Meta

from ocb.setting_checks import Setting as Setting, Value as Value, entries
from ocb_events.errors import InputError, unknown
from workspace_sync.scan import MAX_FILE_BYTES

REWARD_SOURCES = ("human", "self", "harvester", "teacher")

RouteMode = Literal["edge", "edge+sim", "learned"]
Rule = Literal["transfer", "route", "pg", "heuristic"]
Actor = Literal[
    "cli", "daemon", "mcp", "plugin", "watcher", "maintenance", "bench",
    "sync", "human", "teacher", "reembed", "repair", "ui",
]  # fmt: skip
"""Who records an event (its ``actor``): the CLI, the daemon on its own, an MCP client,
the OpenClaw plugin, the workspace watcher, scheduled maintenance, a benchmark; a sync
that names no one, a person's own decision (an anchor, a retraction), a teacher's
labels, a change of embedder, a repair of the log; a person in ``ocb ui``."""


ACTORS: tuple[Actor, ...] = get_args(Actor)
"""Every actor, in the order ``Actor`` names them."""


def actor_of(name: str) -> Actor:
    """``name`` as an ``Actor``: who a caller says records, checked where it is recorded
    (``ocb.store.Store.transact``).

    Raises:
        InputError: not an ``Actor``.
    """
    for actor in ACTORS:
        if actor == name:
            return actor
    raise InputError(f"unknown actor {name!r}", f"use one of: {', '.join(ACTORS)}")


ROUTE_RULES = ("transfer", "route")
"""The rules that learn query-anchored routes (``ocb.engine.routes``), not edges."""


def _m(description: str, **constraints: Any) -> Meta:
    return Meta(description=description, **constraints)


class Traversal(msgspec.Struct, frozen=True):
    """How a query seeds and walks the graph (see ``ocb.engine.traverse``).

    Tiers (on the damped weight): reflex >= ``reflex`` is followed automatically;
    habitual in [``habitual``, ``reflex``) is chosen by the route policy, a softmax over
    the candidates and STOP at temperature ``tau``; below ``habitual`` is dormant and
    skipped; <= ``inhibitory`` vetoes its target. A target receives its source's
    activation times the policy's probability of moving there and fires when that
    reaches ``fire_threshold`` (at most ``branch`` habitual targets per node). A target
    that already fired has ``visit_penalty`` taken off its logit. Seeds are the best
    ``max_seeds`` hybrid matches scoring at least ``seed_ratio`` of the best. A
    correction takes part only in a query it is about: its content and the question it
    corrected hold at least ``correction_min_about`` of the query's terms.
    """

    mode: Annotated[
        RouteMode,
        Meta(
            description="route mode: edge weight only, plus query similarity, or learned",
            extra={"noun": "route mode"},
        ),
    ] = "edge"
    max_hops: Annotated[int, _m("most hops a walk takes from its seeds", ge=0)] = 3
    max_fired: Annotated[int, _m("most nodes one query fires", ge=1)] = 30
    max_context_chars: Annotated[int, _m("most characters of context one answer returns", ge=1)] = (
        6000
    )
    max_seeds: Annotated[int, _m("most seed chunks a query starts from", ge=1)] = 10
    seed_ratio: Annotated[
        float, _m("a seed scores at least this share of the best match", ge=0, le=1)
    ] = 0.4
    lexical_weight: Annotated[
        float, _m("share of BM25 in seed matching (the rest is cosine)", ge=0, le=1)
    ] = 0.6
    model_lexical_weight: Annotated[
        float,
        _m("share of BM25 when a model's vectors are fused with the hashed ones", ge=0, le=1),
    ] = 0.4
    tau: Annotated[float, _m("temperature of the route policy's softmax", gt=0)] = 1.0
    damping: Annotated[
        float, _m("factor on an edge's weight each time one walk reuses it", gt=0, le=1)
    ] = 0.3
    reflex: Annotated[float, _m("damped weight from which an edge is auto-followed", le=1)] = 0.6
    habitual: Annotated[float, _m("damped weight from which the route policy may choose")] = 0.2
    inhibitory: Annotated[
        float, _m("weight at or below which an edge vetoes its target", le=0)
    ] = -0.01
    alpha: Annotated[float, _m("weight of cosine(query, target) in edge+sim routing", ge=0)] = 0.3
    fire_threshold: Annotated[float, _m("activation a habitual target needs to fire", ge=0)] = 0.05
    branch: Annotated[int, _m("most habitual targets one node fires", ge=0)] = 3
    visit_penalty: Annotated[
        float, _m("taken off the logit of a target that already fired", ge=0)
    ] = 0.2
    expand_docs: Annotated[int, _m("best matches whose terms expand a query", ge=0)] = 3
    expand_terms: Annotated[int, _m("most terms one query is expanded with", ge=0)] = 5
    expand_weight: Annotated[float, _m("weight of the expansion terms' matches (0: off)", ge=0)] = (
        0.2
    )
    date_weight: Annotated[
        float, _m("boost of chunks dated inside a date the query names", ge=0)
    ] = 0.5
    date_slack: Annotated[
        int, _m("days outside the named date over which the boost fades", ge=0)
    ] = 7
    date_around: Annotated[int, _m('days either side of "around DATE" in a query', ge=0)] = 3
    passages: Annotated[
        bool, _m("show a chunk's lines without its headings, a speaker the query names first")
    ] = True
    correction_min_about: Annotated[
        float,
        _m("share of a query's terms a correction and its question hold to fire", ge=0, le=1),
    ] = 0.5


class Learning(msgspec.Struct, frozen=True):
    """What outcomes teach. The ``route`` rule compiles each scored question's route
    (``routes.*``; no edge moves); ``transfer`` (the default) learns the same routes
    and lets a question follow the route of one that means about the same; ``pg`` and
    ``heuristic`` change the edges walked:
    learning rate, discount, the rate of the per-node reward baselines (0 turns them
    off), and the weight of each reward source. The policy gradient uses the
    temperature of the traversal that made the trace (``traversal.tau``)."""

    rule: Annotated[
        Rule,
        Meta(
            description="learning rule: query-anchored routes (route), REINFORCE policy "
            "gradient over the edges walked (pg) or heuristic; transfer: routes that "
            "questions of the same meaning share",
            extra={"noun": "learning rule"},
        ),
    ] = "transfer"
    eta: Annotated[float, _m("learning rate", ge=0)] = 0.1
    gamma: Annotated[float, _m("discount of credit per step back along a trace", ge=0, le=1)] = 0.9
    baseline_rate: Annotated[
        float, _m("rate of the per-node reward baselines (0: off)", ge=0, le=1)
    ] = 0.05
    weight_human: Annotated[float, _m("weight of rewards given by a human", ge=0)] = 1.0
    weight_self: Annotated[float, _m("weight of rewards the agent gives itself", ge=0)] = 0.6
    weight_harvester: Annotated[float, _m("weight of rewards from a harvester", ge=0)] = 0.3
    weight_teacher: Annotated[float, _m("weight of rewards from a teacher model", ge=0)] = 0.1

    def source_weight(self, source: str) -> float:
        value: float = getattr(self, f"weight_{source}")
        return value


class Indexing(msgspec.Struct, frozen=True):
    """How sync chunks files and connects chunks: sibling edges inside a file and a few
    cross-file edges between similar chunks. No chunk is longer than
    ``max_chunk_chars`` (a longer line is cut at word boundaries into pieces of about
    ``chunk_chars``). A correction given only a chat or a trace vetoes the chunks whose
    opposition to it reaches ``correction_min_similarity`` (see ``ocb.engine.stance``).
    A file over ``max_file_bytes`` is skipped with a warning, before it is read."""

    chunk_chars: Annotated[int, _m("target size of a chunk in characters", ge=1)] = 600
    sibling_weight: Annotated[float, _m("weight of the edges between neighbouring chunks")] = 0.3
    similar_k: Annotated[int, _m("most similar chunks in other files a new chunk links", ge=0)] = 2
    similar_min: Annotated[float, _m("cosine a similar chunk reaches to be linked")] = 0.35
    similar_weight_low: Annotated[float, _m("edge weight at cosine similar_min")] = 0.2
    similar_weight_high: Annotated[float, _m("edge weight at cosine 1")] = 0.4
    connect_k: Annotated[int, _m("chunks an injected node is linked with", ge=0)] = 3
    inject_weight: Annotated[float, _m("weight of an injected node's edges")] = 0.5
    correction_weight: Annotated[
        float, _m("weight of a correction's edges to what it suppresses")
    ] = -1.0
    max_chunk_chars: Annotated[
        int, _m("hard cap on a chunk's size; longer lines are cut at word boundaries", ge=1)
    ] = 2000
    correction_min_similarity: Annotated[
        float,
        _m("share of a correction clause's terms a chunk's clause covers to be vetoed", gt=0, le=1),
    ] = 0.85
    max_file_bytes: Annotated[
        int, _m("largest file sync reads and memory_get returns; a larger one is skipped", ge=1)
    ] = MAX_FILE_BYTES


class Maintenance(msgspec.Struct, frozen=True):
    """How ``ocb maintain`` changes the graph (see ``ocb.upkeep.maintain``).

    Decay halves edge weights every ``half_life_days`` (canonical nodes at half the
    rate); prune removes edges with ``|w| < prune_below``; merge joins chunks whose
    vectors reach ``merge_min_similarity`` and that fired together in every one of the
    last ``merge_window`` traces where either fired, at least ``merge_min_cofires``
    times; split cuts chunks longer than ``split_over_chars`` into pieces of about
    ``split_chars``; connect links a node without edges to its ``connect_k`` most similar
    chunks at ``connect_weight``; scale shrinks a node's positive outgoing weights to sum
    to at most ``budget``.
    """

    half_life_days: Annotated[float, _m("days in which decay halves edge weights", gt=0)] = 30.0
    prune_below: Annotated[float, _m("prune removes edges with |weight| below", ge=0, le=1)] = 0.02
    merge_min_similarity: Annotated[
        float, _m("cosine two chunks reach to be merged", gt=0, le=1)
    ] = 0.95
    merge_min_cofires: Annotated[int, _m("times two chunks fired together to merge", ge=1)] = 3
    merge_window: Annotated[int, _m("recent traces merge looks at", ge=1)] = 1000
    split_over_chars: Annotated[int, _m("split cuts chunks longer than this", ge=1)] = 2000
    split_chars: Annotated[int, _m("size of the pieces split cuts", ge=1)] = 600
    connect_k: Annotated[int, _m("similar chunks connect links a lone node with", ge=0)] = 3
    connect_weight: Annotated[float, _m("weight of the edges connect adds", gt=0, le=1)] = 0.3
    budget: Annotated[float, _m("cap on the sum of a node's positive out-weights", gt=0)] = 3.0


class Storage(msgspec.Struct, frozen=True):
    """How a brain keeps its derived data: a snapshot when ``snapshot_tail`` records
    have piled up since the last one, and a checkpoint kept for time travel in every
    interval of ``checkpoint_every`` records."""

    checkpoint_every: Annotated[
        int, _m("records between the snapshots kept for time travel", ge=1)
    ] = 10_000
    snapshot_tail: Annotated[
        int, _m("records since the last snapshot that make a new one", ge=1)
    ] = 500


class Memory(msgspec.Struct, frozen=True):
    """How recall scores and spreads (see ``ocb.memory.recall``).

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

    w_match: Annotated[float, _m("weight of the match in a fact's score", ge=0)] = 0.4
    w_salience: Annotated[float, _m("weight of salience in a fact's score", ge=0)] = 0.35
    w_access: Annotated[float, _m("weight of access recency in a fact's score", ge=0)] = 0.25
    half_life_days: Annotated[float, _m("days in which access recency halves", gt=0)] = 7.0
    access_boost: Annotated[float, _m("access boost per ln(1 + recalls)", ge=0)] = 0.1
    never_accessed: Annotated[float, _m("access score of a fact never recalled", ge=0, le=1)] = 0.25
    lexical_weight: Annotated[
        float, _m("share of BM25 in a fact's match (the rest is cosine)", ge=0, le=1)
    ] = 0.6
    match_ratio: Annotated[
        float, _m("facts matching this share of the best rank first", ge=0, le=1)
    ] = 0.5
    hop_decay: Annotated[float, _m("activation kept per hop of associative recall", ge=0, le=1)] = (
        0.5
    )
    min_activation: Annotated[float, _m("entities below this activation are dropped", ge=0)] = 0.1
    max_active_entities: Annotated[
        int, _m("most entities associative recall keeps active", ge=1)
    ] = 20
    max_chars: Annotated[int, _m("most characters of one recall bundle", ge=1)] = 2000
    around_days: Annotated[int, _m('days either side of "around DATE"', ge=0)] = 3
    stale_days: Annotated[float, _m("age in days at which a current fact is stale", gt=0)] = 30.0


class Secrets(msgspec.Struct, frozen=True):
    """What is redacted from text before it is recorded (see ``workspace_sync.secrets``):
    scanning on or off, the high-entropy rule's bits per character (base64; hex needs
    two thirds of it) and shortest run, extra patterns (whitespace-separated regexes,
    ``kind=regex`` to name them) and an allow-list (whitespace-separated literals, or
    ``re:REGEX`` matched against the whole secret) that is never redacted."""

    enabled: Annotated[bool, _m("redact secrets from text before it is recorded")] = True
    entropy_min: Annotated[
        float, _m("bits per character from which a random-looking run is a secret", gt=0, le=6)
    ] = 3.7
    entropy_min_chars: Annotated[
        int, _m("shortest random-looking run that counts as a secret", ge=8)
    ] = 20
    patterns: Annotated[
        str,
        Meta(
            description="extra secret regexes, space-separated (kind=REGEX names one)",
            extra={"parse": "patterns"},
        ),
    ] = ""
    allow: Annotated[
        str,
        Meta(
            description="never redacted: literals or re:REGEX, space-separated",
            extra={"parse": "allow"},
        ),
    ] = ""


S = TypeVar("S", bound=msgspec.Struct)


class Routes(msgspec.Struct, frozen=True):
    """How the ``route`` rule compiles repeated questions (see ``ocb.engine.routes``). A
    query follows the route of the scored question whose terms it shares most, when
    they share at least ``match`` of them (Jaccard). A route fires the chunks its
    outcomes proved (halving a scalar-scored context down to ``min_chunks``), explores
    ``explore`` untried chunks after a miss, and after ``explore_limit`` misses fires
    nothing until the workspace changes. Under the ``transfer`` rule a question without
    a route of its own borrows the route of the question sharing the most of its meaning
    (at least ``similar``), or takes it as a prior (at least ``related``), firing only
    its chunks among the question's own ``within`` best matches."""

    match: Annotated[
        float,
        _m("share of terms a query has in common with a route's question to follow it", gt=0, le=1),
    ] = 0.8
    explore: Annotated[int, _m("untried chunks a route fires after a miss", ge=1)] = 4
    explore_limit: Annotated[
        int, _m("misses after which a route stops exploring until the workspace changes", ge=1)
    ] = 5
    min_chunks: Annotated[int, _m("chunks a route scored without --used narrows down to", ge=1)] = 1
    similar: Annotated[
        float,
        _m(
            "under the transfer rule, the share of meaning (idf-weighted terms) a question "
            "shares with another's route to follow it in place of its walk",
            gt=0,
            le=1,
        ),
    ] = 0.7
    related: Annotated[
        float,
        _m(
            "under the transfer rule, the share of meaning a question shares with another's "
            "route to fire that route's chunks first, then its own best matches",
            gt=0,
            le=1,
        ),
    ] = 0.4
    similar_vector: Annotated[
        float,
        _m(
            "under the transfer rule with a model embedder, the cosine of the model's "
            "vectors of two questions from which one borrows the other's route",
            gt=0,
            le=1,
        ),
    ] = 0.95
    within: Annotated[
        int,
        _m("a route's chunk fires for another question only among its own best matches", ge=1),
    ] = 30
    prior_share: Annotated[
        float,
        _m("share of the context budget a related question's own matches fill", ge=0, le=1),
    ] = 0.5


class Sql(msgspec.Struct, frozen=True):
    """What one query over the history may take (``ocb sql``, ``report``, ``audit``; see
    ``replay.isolation``). It runs in a process of its own on ``threads`` threads, is
    stopped after ``timeout_s`` seconds or when it needs more than ``memory_mb`` MiB
    (nothing spills to disk), and may return at most ``max_result_mb`` MiB of rows."""

    timeout_s: Annotated[
        float, _m("seconds one SQL query may run before it is stopped", gt=0, le=3600)
    ] = 30.0
    memory_mb: Annotated[
        int, _m("MiB of memory one SQL query may use (nothing spills)", ge=64, le=65536)
    ] = 1024
    threads: Annotated[int, _m("threads one SQL query runs on", ge=1, le=64)] = 2
    max_result_mb: Annotated[int, _m("MiB of rows one SQL query may return", ge=1, le=4096)] = 64


SECTIONS: dict[str, type[msgspec.Struct]] = {
    "traversal": Traversal,
    "learning": Learning,
    "routes": Routes,
    "indexing": Indexing,
    "maintenance": Maintenance,
    "storage": Storage,
    "memory": Memory,
    "secrets": Secrets,
    "sql": Sql,
}


# --------------------------------------------------------------------------- registry


def registry() -> dict[str, Setting]:
    """Every setting of every section in ``SECTIONS`` by ``section.name``, sorted by
    key (derived from the section Structs; do not modify the result).

    Raises:
        TypeError: a section declares a field of an unsupported type.
    """
    out = {k: s for name, cls in SECTIONS.items() for k, s in entries(name, cls).items()}
    return dict(sorted(out.items()))


def lookup(key: str) -> Setting:
    """The registry entry of ``key``.

    Raises:
        InputError: no such setting (naming the close matches).
    """
    section = key.partition(".")[0]
    cls = SECTIONS.get(section)
    got = entries(section, cls).get(key) if cls is not None else None
    if got is None:
        raise unknown("setting", key, list(registry()), "run ocb config to list the settings")
    return got


def check_key(key: str, value: object) -> Value:
    """Validate a ``section.name`` setting and coerce its value.

    Raises:
        InputError: unknown key, a value of the wrong kind, or out of its range.
    """
    return lookup(key).check(value)


def _value(s: Setting, recorded: Mapping[str, object]) -> Value:
    """The recorded value of ``s`` when it is still valid (a value recorded under
    older rules gives way to the default), else its default."""
    if s.key in recorded:
        try:
            return s.check(recorded[s.key])
        except InputError:
            pass
    return s.default


def in_force(recorded: Mapping[str, object]) -> dict[str, Value]:
    """Every setting's value in force, by key: recorded, else the default."""
    return {key: _value(s, recorded) for key, s in registry().items()}


def section_of(cls: type[msgspec.Struct]) -> str:
    """The name ``cls`` has in ``SECTIONS``."""
    return next(k for k, v in SECTIONS.items() if v is cls)


def resolve(cls: type[S], recorded: Mapping[str, object], **overrides: object) -> S:
    """Defaults of ``cls``, then recorded config, then non-None ``overrides``.

    Raises:
        InputError: an override that is unknown or invalid.
    """
    section = section_of(cls)
    prefix = section + "."
    if not any(k.startswith(prefix) for k in recorded) and all(
        v is None for v in overrides.values()
    ):
        return cls()  # nothing recorded or asked: the defaults, without the registry
    changes: dict[str, object] = {
        s.name: _value(s, recorded) for s in entries(section, cls).values() if s.key in recorded
    }
    for name, value in overrides.items():
        if value is not None:
            changes[name] = check_key(f"{section}.{name}", value)
    return msgspec.structs.replace(cls(), **changes)
