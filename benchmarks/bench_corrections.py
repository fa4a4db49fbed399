"""Corrections by content: which chunks a CORRECTION given a chat vetoes, on cases
written from the example workspace, against the chunks it should veto.

Each case is a question asked in a chat, a correction of its answer as a user would
type it, and the chunks holding the advice the correction withdraws (often none: then
every veto is a false positive). For each ``indexing.correction_min_similarity`` the
script decides each correction (``ocb.graph.inject.decide_inject``, nothing recorded) and
sums true and false positives and misses over the cases; ``--all`` (every chunk that
fired) is the baseline. Prints a Markdown table, writes JSON to ``--out``.

    .venv/bin/python benchmarks/bench_corrections.py      # ~10 s

This is a benchmark, not a test: the README example is held exactly by a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from ocb.brain import Brain
from ocb.graph.inject import decide_inject

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE.parent / "examples" / "workspace"
HOTFIX_ADVICE = ["memory/2026-11-10.md::5", "memory/2026-11-10.md::6"]
FLAG_OPINION = ["memory/2026-11-02.md::1", "memory/2026-11-02.md::5"]
ENDPOINT = "does a new endpoint that nothing calls need a feature flag"

CASES: list[tuple[str, str, list[str]]] = [
    ("can we skip CI for an urgent hotfix", "Never skip CI for hotfixes", HOTFIX_ADVICE),
    (
        "can we skip CI for an urgent hotfix",
        "Urgent hotfixes must still go through CI",
        HOTFIX_ADVICE,
    ),
    (
        "is the full CI pipeline too slow for urgent customer fixes",
        "The full CI pipeline is not too slow for urgent fixes; use the ci-hotfix lane",
        HOTFIX_ADVICE,
    ),
    (ENDPOINT, "New endpoints need a feature flag too", FLAG_OPINION),
    (
        ENDPOINT,
        "New endpoints that the web app calls are behaviour changes and ship behind a feature flag",
        FLAG_OPINION,
    ),
    (ENDPOINT, "Do not ship a new endpoint without a feature flag", FLAG_OPINION),
    (
        "should releases go out on an on-call handoff day",
        "Do not release on on-call handoff days",
        [],
    ),
    (
        "can I deploy a locally built image to production",
        "Never deploy a locally built image to production",
        [],
    ),
    (
        "in a lock queue should I cancel the long report or the migration",
        "In a lock queue, cancel the waiting DDL, not the long-running reader",
        [],
    ),
    (
        "is a 10-minute canary bake enough",
        "A 10-minute canary bake is not enough for regular releases",
        [],
    ),
    (
        "should I fix forward before rolling back",
        "Do not fix forward under pressure; roll back first",
        [],
    ),
    (
        "can custom reports run on the primary database",
        "Custom reports must not run on the primary; use the replica",
        [],
    ),
]
THRESHOLDS = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 1.0]


def score(got: list[set[str]], want: list[set[str]]) -> dict[str, Any]:
    tp = sum(len(g & w) for g, w in zip(got, want, strict=True))
    fp = sum(len(g - w) for g, w in zip(got, want, strict=True))
    fn = sum(len(w - g) for g, w in zip(got, want, strict=True))
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
        "exact_cases": sum(g == w for g, w in zip(got, want, strict=True)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "corrections.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        brain, _ = Brain.init(Path(tmp) / "brain", WORKSPACE, durability="none")
        with brain as b:
            traces = [
                b.trace(b.query(q, chat_id=f"c{i}").trace_id) for i, (q, _, _) in enumerate(CASES)
            ]
            _, _, ix = b.settings()

            def decide(i: int, threshold: float, every: bool) -> set[str]:
                s = msgspec.structs.replace(ix, correction_min_similarity=threshold)
                got = decide_inject(
                    b.graph, b.search_index(), b.embedder(), "CORRECTION", CASES[i][1], s,
                    trace=traces[i], all_fired=every,
                )  # fmt: skip
                return set(got.vetoed)

            want = [set(w) for _, _, w in CASES]
            rows = {"--all": score([decide(i, 1.0, True) for i in range(len(CASES))], want)}
            per_case: dict[str, list[list[str]]] = {}
            for t in THRESHOLDS:
                got = [decide(i, t, False) for i in range(len(CASES))]
                rows[f"{t:g}"] = score(got, want)
                per_case[f"{t:g}"] = [sorted(g) for g in got]
    print(f"{len(CASES)} cases, {sum(map(len, want))} chunks to veto\n")
    print("| vetoes | TP | FP | FN | precision | recall | cases exact |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['tp']} | {r['fp']} | {r['fn']} | {r['precision']:.2f} "
            f"| {r['recall']:.2f} | {r['exact_cases']} / {len(CASES)} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    cases = [{"question": q, "correction": c, "want": w} for q, c, w in CASES]
    args.out.write_text(
        json.dumps({"cases": cases, "rows": rows, "vetoed": per_case}, indent=1) + "\n"
    )


if __name__ == "__main__":
    sys.exit(main())
