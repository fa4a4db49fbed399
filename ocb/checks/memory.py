"""Health checks of the typed memory: hub entities, near-duplicate facts, too little
data for associative recall, recall bundles cut by the budget, and access decay
settings that erase memories too fast. Pure: ``memory_checks`` reads a memory state,
the ``Memory`` settings and a time, and returns one ``Check`` per diagnosis.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from ocb.memory.recall import FactIndex, access_decay
from ocb.settings import Memory
from projections.memory import DAY_NS, Fact, State as MemoryState
from replay.verify import PASS, SKIP, WARN, Check
from workspace_sync.text import terms

HUB_FACT_SHARE = 0.25
"""An entity in at least this share of current facts (and ``HUB_MIN_FACTS``) is a hub."""
HUB_MIN_FACTS = 10
HUB_CO_SHARE = 0.5
"""... or one touching this share of all co-occurrence weight (of ``HUB_MIN_CO_WEIGHT``+)."""
HUB_MIN_CO_WEIGHT = 20
HUBS_NAMED = 3
DUP_NUM, DUP_DEN = 9, 10
"""Two facts are near-duplicates when their term sets have Jaccard >= 9/10."""
MIN_FACTS = 20
MIN_LINKED_PAIRS = 5
OVER_BUDGET_SHARE = 0.2
MIN_HALF_LIFE_DAYS = 2.0
RECALLED_DAYS_AGO = 14
"""A fact recalled once this many days ago should keep ``KEEP_SHARE`` of the access
term of a fact never recalled."""
KEEP_SHARE = 0.25
NO_FACTS = "no typed facts yet"
MEMORY_CHECKS = (
    "memory hubs",
    "near-duplicate facts",
    "associative recall data",
    "recall bundles over budget",
    "access decay settings",
)
"""The names of the typed-memory checks, in order."""
NAMES = MEMORY_CHECKS


def memory_checks(mem: MemoryState, s: Memory, now_ns: int) -> list[Check]:
    """Every check of the typed memory.

    Args:
        mem: the memory projection.
        s: the resolved ``memory`` settings.
        now_ns: the time the brain is looked at (its clock, or its last record as of).

    Returns:
        One check per name in ``NAMES``, in that order.
    """
    return [
        hub_check(mem),
        duplicate_check(mem),
        cold_start_check(mem),
        budget_check(mem, s),
        decay_check(mem, s, now_ns),
    ]


# --------------------------------------------------------------------------- hubs


def _co_shares(mem: MemoryState) -> tuple[int, dict[str, float]]:
    """Total co-occurrence weight (each pair once) and each entity's share of it."""
    total = sum(sum(row.values()) for row in mem.co.values()) // 2
    if not total:
        return 0, {}
    return total, {k: sum(row.values()) / total for k, row in mem.co.items()}


def hubs(mem: MemoryState) -> list[tuple[str, int, float]]:
    """Hub entities as (key, current facts mentioning it, share of co-occurrence
    weight), most mentioned first."""
    size = mem.size
    total, co = _co_shares(mem)
    found = []
    for key, ent in mem.entities.items():
        n = len(ent.facts)
        by_facts = n >= HUB_MIN_FACTS and n >= HUB_FACT_SHARE * size
        by_co = total >= HUB_MIN_CO_WEIGHT and co.get(key, 0.0) >= HUB_CO_SHARE
        if by_facts or by_co:
            found.append((key, n, co.get(key, 0.0)))
    return sorted(found, key=lambda h: (-h[1], -h[2], h[0]))


def hub_check(mem: MemoryState) -> Check:
    """Warn about entities that most facts mention or most co-occurrence runs through."""
    name, size = NAMES[0], mem.size
    if not size:
        return Check(name, SKIP, NO_FACTS)
    found = hubs(mem)
    if not found:
        if not mem.entities:
            return Check(name, PASS, f"no @entities in {size} facts")
        key, ent = min(mem.entities.items(), key=lambda kv: (-len(kv[1].facts), kv[0]))
        n = len(ent.facts)
        share = f"{n / size:.0%} of facts ({n} of {size})"
        return Check(name, PASS, f"no hub: the widest, @{ent.name}, is in {share}")
    parts = []
    for key, n, co in found[:HUBS_NAMED]:
        part = f"@{mem.entities[key].name} in {n / size:.0%} of facts ({n} of {size})"
        parts.append(part + (f", {co:.0%} of co-occurrence weight" if co >= HUB_CO_SHARE else ""))
    more = f" and {len(found) - HUBS_NAMED} more" if len(found) > HUBS_NAMED else ""
    them = "it" if len(found) == 1 else "them"
    return Check(
        name,
        WARN,
        "; ".join(parts) + more + f": IDF damping keeps {them} from swallowing activation, "
        f"but consider splitting {them} into narrower entities",
    )


# --------------------------------------------------------------------------- duplicates


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    small, large = sorted((len(a), len(b)))
    if DUP_DEN * small < DUP_NUM * large:
        return False
    inter = len(a & b)
    return DUP_DEN * inter >= DUP_NUM * (len(a) + len(b) - inter)


def _prefix_buckets(sets: Sequence[frozenset[str]]) -> dict[str, list[int]]:
    """Prefix filtering: sort each set's terms rarest first; two sets with Jaccard >=
    t share a term among their first n - ceil(t * n) + 1, so only sets sharing a
    bucket are compared."""
    df = Counter(t for s in sets for t in s)
    buckets: dict[str, list[int]] = {}
    for i, s in enumerate(sets):
        n = len(s)
        prefix = n - (DUP_NUM * n + DUP_DEN - 1) // DUP_DEN + 1
        for t in sorted(s, key=lambda t: (df[t], t))[:prefix]:
            buckets.setdefault(t, []).append(i)
    return buckets


def near_duplicates(facts: Sequence[Fact]) -> tuple[int, tuple[Fact, Fact] | None]:
    """Pairs of facts whose term sets (content and entities) have Jaccard >= 0.9: how
    many, and the first in the given order. Exact duplicates are grouped first, and
    the rest compared only within prefix buckets, never all pairs."""
    groups: dict[frozenset[str], list[int]] = {}
    for i, f in enumerate(facts):
        s = frozenset(terms(FactIndex.text_of(f)))
        if s:
            groups.setdefault(s, []).append(i)
    sets = list(groups)
    members = [groups[s] for s in sets]
    count = sum(len(g) * (len(g) - 1) // 2 for g in members)
    first = min(((g[0], g[1]) for g in members if len(g) > 1), default=None)
    seen: set[tuple[int, int]] = set()
    for bucket in _prefix_buckets(sets).values():
        bucket.sort(key=lambda i: len(sets[i]))
        for x, a in enumerate(bucket):
            for b in bucket[x + 1 :]:
                if DUP_DEN * len(sets[a]) < DUP_NUM * len(sets[b]):
                    break  # sorted by size: every later set is too large
                pair = (min(a, b), max(a, b))
                if pair in seen:
                    continue
                seen.add(pair)
                if not _similar(sets[a], sets[b]):
                    continue
                count += len(members[a]) * len(members[b])
                ia, ib = members[a][0], members[b][0]
                got = (min(ia, ib), max(ia, ib))
                first = got if first is None else min(first, got)
    return count, (facts[first[0]], facts[first[1]]) if first is not None else None


def duplicate_check(mem: MemoryState) -> Check:
    """Warn about current non-summary facts that say (nearly) the same thing."""
    name = NAMES[1]
    current = [f for ff in mem.files.values() for i in ff.ids if (f := mem.facts[i]).kind != "S"]
    if not current:
        return Check(name, SKIP, NO_FACTS if not mem.size else "only summary facts")
    current.sort(key=lambda f: (f.path, f.start_line, f.id))
    count, pair = near_duplicates(current)
    if pair is None:
        return Check(name, PASS, f"no two of {len(current)} facts share 90% of their terms")
    return Check(
        name,
        WARN,
        f"{count} near-duplicate pair(s), e.g. {pair[0].source} ~ {pair[1].source}: "
        "delete one of each pair or merge them into one bullet",
    )


# --------------------------------------------------------------------------- data, budget


def cold_start_check(mem: MemoryState) -> Check:
    """Warn when associative recall has too few facts or entity links to spread over."""
    name, size = NAMES[2], mem.size
    if not size:
        return Check(
            name,
            SKIP,
            f"{NO_FACTS}: add a ## Retain section of '- W @entity: fact' bullets to a "
            "note, or run ocb retain",
        )
    pairs = sum(len(row) for row in mem.co.values()) // 2
    counts = f"{size} facts, {pairs} linked entity pairs"
    if size < MIN_FACTS or pairs < MIN_LINKED_PAIRS:
        return Check(
            name,
            WARN,
            f"associative recall has little to work with ({counts}): "
            "retain facts with 2+ @entities",
        )
    return Check(name, PASS, f"{counts} over {len(mem.entities)} entities")


def budget_check(mem: MemoryState, s: Memory) -> Check:
    """Warn when the character budget cuts too many recall bundles."""
    name = NAMES[3]
    if not mem.recalls:
        return Check(name, SKIP, "no recalls yet")
    share = mem.recalls_over_budget / mem.recalls
    counts = f"{share:.0%} of recalls ({mem.recalls_over_budget} of {mem.recalls})"
    if share > OVER_BUDGET_SHARE:
        return Check(
            name,
            WARN,
            f"{counts} were cut by the {s.max_chars}-character budget: raise memory.max_chars "
            f"(e.g. ocb config memory.max_chars {s.max_chars * 2}) or ask for fewer with --k",
        )
    return Check(name, PASS, f"{counts} cut by the {s.max_chars}-character budget")


# --------------------------------------------------------------------------- decay


def _half_life_needed(s: Memory) -> float | None:
    """The shortest half-life that keeps a fact recalled once ``RECALLED_DAYS_AGO``
    days ago at ``KEEP_SHARE`` of ``never_accessed``; None when none does."""
    ratio = (1 + s.access_boost * math.log1p(1)) / (s.never_accessed * KEEP_SHARE)
    return RECALLED_DAYS_AGO / math.log2(ratio) if ratio > 1 else None


def _decay_problems(s: Memory, kept: float) -> list[str]:
    default = Memory()
    problems = []
    if s.half_life_days < MIN_HALF_LIFE_DAYS:
        problems.append(
            f"memory.half_life_days {s.half_life_days:g} erases a recalled fact's boost "
            f"within days: set it to {default.half_life_days:g}"
        )
    elif kept < s.never_accessed * KEEP_SHARE:
        need = _half_life_needed(s)
        fix = (
            f"set memory.half_life_days to at least {math.ceil(need)}"
            if need is not None
            else f"set memory.never_accessed to {default.never_accessed:g}"
        )
        problems.append(
            f"a fact recalled once {RECALLED_DAYS_AGO} days ago keeps access {kept:.3f}, under "
            f"a quarter of a never-recalled fact's {s.never_accessed:g}: {fix}"
        )
    rest = s.w_match + s.w_salience
    if s.w_access > rest:
        problems.append(
            f"memory.w_access {s.w_access:g} outweighs w_match + w_salience ({rest:g}), so "
            f"recency drowns relevance: set memory.w_access to {min(default.w_access, rest):g}"
        )
    return problems


def decay_check(mem: MemoryState, s: Memory, now_ns: int) -> Check:
    """Warn when the access decay settings would erase useful memories too fast."""
    name = NAMES[4]
    kept = access_decay(now_ns - RECALLED_DAYS_AGO * DAY_NS, 1, now_ns, s)
    problems = _decay_problems(s, kept)
    if problems:
        return Check(name, WARN, "; ".join(problems))
    detail = (
        f"half-life {s.half_life_days:g} days: a fact recalled once {RECALLED_DAYS_AGO} days "
        f"ago keeps access {kept:.2f} (never recalled {s.never_accessed:g})"
    )
    if mem.access:
        boosted = sum(
            1
            for a in mem.access.values()
            if access_decay(a.last_ns, a.count, now_ns, s) > s.never_accessed
        )
        detail += f"; {boosted} of {len(mem.access)} recalled facts still rank above it"
    return Check(name, PASS, detail)
