"""Corrections by content: which chunks a CORRECTION given a chat vetoes, and for which
later questions a recorded correction fires.

**Vetoes.** The cases (``benchmarks/correction_cases.py``, 93 written by hand over the
example workspace plus the notes in ``benchmarks/corrections_notes/``) are a question
asked in a chat, a correction of its answer as a user would type it, and the chunks
holding what it takes back (often none: then every veto is a false positive). Each
correction is decided (``ocb.graph.inject.decide_inject``, nothing recorded) at each
``indexing.correction_min_similarity``; ``--all`` (every chunk that fired) is the
baseline. Precision and recall count chunks; their 95 % intervals resample the cases
(2,000 draws, seeded), since the chunks of one case are not independent. The parts
are reported apart: ``tune``, ``held`` (every third case of a category, not looked at
while the rule was first tuned) and ``fresh`` (a second held-out batch); ``--part P``
prints one part case by case.

**Firing.** One correction per topic is recorded in one brain, then probe questions are
asked: questions about none of them (``UNRELATED``), the trial's "image workers are
overwhelmed" after the thumbd correction, and paraphrases of what each corrected
(``RELATED``). It counts how often a correction fires or ranks first where it should
not, and how often the right one fires where it should with what it vetoes kept out.

With ``--base DIR`` the same cases run on the code in DIR too (another checkout, e.g.
the commit before a change), in a subprocess, and both tables are printed.

    .venv/bin/python benchmarks/bench_corrections.py --base /tmp/base     # ~2.5 min
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from correction_cases import (  # noqa: E402
    CASES,
    EXPORTS_Q,
    FLAG_Q,
    HOTFIX_Q,
    POOL_Q,
    PRIMARY_Q,
    RAMP_Q,
    THUMB_Q,
    part,
)

import ocb  # noqa: E402
from ocb.brain import Brain  # noqa: E402
from ocb.graph.inject import decide_inject  # noqa: E402
from ocb_events.errors import InputError  # noqa: E402

WORKSPACE = HERE.parent / "examples" / "workspace"
NOTES = HERE / "corrections_notes"
PARTS = ("tune", "held", "fresh")
THRESHOLDS = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 1.0]
ABOUT = [0.0, 0.3, 0.4, 0.5, 0.6, 0.7]  # traversal.correction_min_about
DEFAULT = 0.85

# one correction per topic, recorded before the probes: (topic, question, correction)
RECORDED = [
    (
        "thumbd",
        THUMB_Q,
        "Never resize images in the API pods, even when thumbd falls behind; scale thumbd instead",
    ),
    ("hotfix", HOTFIX_Q, "Never skip CI for hotfixes"),
    ("flag", FLAG_Q, "Do not ship a new endpoint without a feature flag"),
    ("exports", EXPORTS_Q, "Do not restart all the worker pods when ExportsStuck fires"),
    ("pool", POOL_Q, "Find the slow query rather than raising the pool size"),
    ("reports", PRIMARY_Q, "Custom reports must not run on the primary; use the replica"),
    ("ramp", RAMP_Q, "Flags are not ramped during the freeze"),
]
TRIAL = "image workers are overwhelmed"
UNRELATED = [
    "how do I roll back a bad deploy",
    "what does the smoke suite check",
    "who is on call in the week of 2026-11-16",
    "how long is the canary bake",
    "what happens at the on-call handoff",
    "which alerts page a human",
    "how do I find what blocks a migration",
    "what is the lock_timeout rule for migrations",
    "how do I create a feature flag",
    "who owns lumen-web",
    "what does Priya want in a PR description",
    "when does the nightly digest run",
    "how are images signed",
    "what is the Kyverno policy",
    "what does Lena want after an incident",
    "how do I verify a rollback",
    "what are the severity levels of an incident",
    "how does autovacuum work on responses",
    "which indexes does the responses table have",
    "what is the monorepo version",
    "how do I run the CI checks locally",
    "what happened in INC-2026-031",
    "who is Noor",
    "how big is the largest tenant",
    "what is expand/contract",
]
RELATED = [
    ("thumbd", "thumbd is behind, should the API pods resize the images"),
    ("thumbd", "thumbd falls behind again"),
    ("hotfix", "an urgent hotfix is ready, do we need to wait for CI"),
    ("hotfix", "skip CI for a customer hotfix"),
    ("flag", "does a new endpoint need a feature flag"),
    ("exports", "exports are stuck, should I restart the workers"),
    ("exports", "ExportsStuck is firing"),
    ("pool", "cl_waiting climbs, should I raise default_pool_size"),
    ("reports", "can Brightline run custom reports on the primary"),
    ("ramp", "can I ramp insights.summary-v2 during the freeze"),
]


def workspace(tmp: Path) -> Path:
    """The example workspace with the benchmark's notes added (the example is not
    touched)."""
    ws = tmp / "workspace"
    shutil.copytree(WORKSPACE, ws)
    shutil.copytree(NOTES, ws, dirs_exist_ok=True)
    return ws


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
        "exact": sum(g == w for g, w in zip(got, want, strict=True)),
        "cases": len(got),
    }


def intervals(got: list[set[str]], want: list[set[str]]) -> dict[str, list[float]]:
    """95 % percentile intervals of precision and recall over cases resampled with
    replacement (2,000 draws, seed 0)."""
    rows = np.array([(len(g & w), len(g - w), len(w - g)) for g, w in zip(got, want, strict=True)])
    draws = np.random.default_rng(0).integers(0, len(rows), size=(2000, len(rows)))
    tp, fp, fn = (rows[draws][:, :, k].sum(axis=1).astype(float) for k in range(3))
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = np.where(tp + fp > 0, tp / (tp + fp), 1.0)
        rec = np.where(tp + fn > 0, tp / (tp + fn), 1.0)
    q = [2.5, 97.5]
    return {
        "ci_precision": [round(float(x), 3) for x in np.percentile(prec, q)],
        "ci_recall": [round(float(x), 3) for x in np.percentile(rec, q)],
    }


def decide_all(b: Brain, traces: list[Any], threshold: float, every: bool) -> list[set[str]]:
    _, _, ix = b.store.settings()
    s = msgspec.structs.replace(ix, correction_min_similarity=threshold)
    out = []
    for case, trace in zip(CASES, traces, strict=True):
        got = decide_inject(
            b.graph, b.store.search_index(), b.store.embedder(), "CORRECTION", case.correction, s,
            trace=trace, all_fired=every,
        )  # fmt: skip
        out.append(set(got.vetoed))
    return out


def vetoes(b: Brain) -> dict[str, Any]:
    traces = [b.trace(b.query(c.question, chat_id=f"c{i}").trace_id) for i, c in enumerate(CASES)]
    want = [set(c.want) for c in CASES]
    parts_of = part(CASES)
    sweep = {"--all": score(decide_all(b, traces, 1.0, True), want)}
    per_threshold = {}
    for t in THRESHOLDS:
        got = decide_all(b, traces, t, False)
        per_threshold[t] = got
        sweep[f"{t:g}"] = score(got, want)
    got = per_threshold[DEFAULT]
    parts: dict[str, Any] = {}
    for name in (*PARTS, "held out", "all"):
        keep = {"held out": ("held", "fresh"), "all": PARTS}.get(name, (name,))
        idx = [i for i in range(len(CASES)) if parts_of[i] in keep]
        g, w = [got[i] for i in idx], [want[i] for i in idx]
        cats = {}
        for cat in dict.fromkeys(CASES[i].category for i in idx):
            ci = [k for k, i in enumerate(idx) if CASES[i].category == cat]
            cats[cat] = score([g[k] for k in ci], [w[k] for k in ci])
        parts[name] = {"total": score(g, w) | intervals(g, w), "categories": cats}
    cases = [
        {"category": c.category, "part": p, "question": c.question, "correction": c.correction,
         "want": sorted(c.want), "vetoed": sorted(g)}
        for c, p, g in zip(CASES, parts_of, got, strict=True)
    ]  # fmt: skip
    return {"sweep": sweep, "parts": parts, "cases": cases}


def probe(
    b: Brain, node_of: dict[str, str], withdrawn: dict[str, set[str]], **settings: Any
) -> dict[str, Any]:
    """Ask the probe questions (nothing recorded) and count where corrections fire."""
    mine = set(node_of.values())

    def ask(q: str) -> tuple[list[str], str, set[str]]:
        a = b.query(q, top=10, record=False, **settings)
        shown = set(a.fired) | {h.id for h in a.results}
        return [f for f in a.fired if f in mine], a.results[0].id if a.results else "", shown

    stray = {q: ask(q) for q in UNRELATED}
    trial_fired, trial_first, trial_shown = ask(TRIAL)
    right = []
    for topic, q in RELATED:
        fired, first, shown = ask(q)
        right.append({"topic": topic, "question": q, "fired": node_of[topic] in fired,
                      "first": first == node_of[topic],
                      "leaked": sorted(withdrawn[topic] & shown)})  # fmt: skip
    return {
        "unrelated": len(UNRELATED),
        "unrelated_fired": sum(bool(f) for f, _, _ in stray.values()),
        "unrelated_first": sum(first in mine for _, first, _ in stray.values()),
        "unrelated_detail": {q: f for q, (f, _, _) in stray.items() if f},
        "trial": {"question": TRIAL, "fired": node_of["thumbd"] in trial_fired,
                  "first": trial_first == node_of["thumbd"], "vetoes": sorted(withdrawn["thumbd"]),
                  "vetoes_shown": sorted(withdrawn["thumbd"] & trial_shown)},
        "related": len(RELATED),
        "related_fired": sum(r["fired"] for r in right),
        "related_first": sum(r["first"] for r in right),
        "related_leaked": sum(bool(r["leaked"]) for r in right),
        "related_detail": right,
    }  # fmt: skip


def firing(b: Brain) -> dict[str, Any]:
    node_of: dict[str, str] = {}
    withdrawn: dict[str, set[str]] = {}
    for k, (topic, question, text) in enumerate(RECORDED):
        b.query(question, chat_id=f"r{k}")
        rep = b.inject("CORRECTION", text, chat_id=f"r{k}")
        node_of[topic] = rep.node_id
        withdrawn[topic] = set(rep.inhibits)
    out = probe(b, node_of, withdrawn)
    sweep = {}
    for t in ABOUT:
        try:
            sweep[f"{t:g}"] = probe(b, node_of, withdrawn, correction_min_about=t)
        except InputError:  # code without the setting
            break
    out["sweep"] = sweep
    return out


def measure() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        brain, _ = Brain.init(Path(tmp) / "brain", workspace(Path(tmp)), durability="none")
        with brain as b:
            out = vetoes(b)
            out["firing"] = firing(b)
    out["code"] = str(Path(ocb.__file__).resolve().parent.parent)
    return out


def _row(label: str, r: dict[str, Any]) -> str:
    ci = ""
    if "ci_precision" in r:
        (a, b), (c, d) = r["ci_precision"], r["ci_recall"]
        ci = f" {a:.2f}-{b:.2f} | {c:.2f}-{d:.2f} |"
    else:
        ci = " | |"
    return (
        f"| {label} | {r['tp']} | {r['fp']} | {r['fn']} | {r['precision']:.2f} | "
        f"{r['recall']:.2f} | {r['exact']} / {r['cases']} |{ci}"
    )


def show(name: str, m: dict[str, Any], part: str) -> None:
    print(f"\n### {name} ({m['code']}): vetoes at correction_min_similarity {DEFAULT:g}\n")
    print(
        "| cases | TP | FP | FN | precision | recall | cases exact | precision 95 % | recall 95 % |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for p in (*PARTS, "held out", "all") if part == "all" else (part,):
        print(_row(f"**{p}**", m["parts"][p]["total"]))
    for cat, r in m["parts"][part]["categories"].items():
        print(_row(f"{part}: {cat}", r))
    if part == "all":
        print(f"\n{name}: the threshold swept over all cases\n")
        print("| vetoes | TP | FP | FN | precision | recall | cases exact |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for t, r in m["sweep"].items():
            print(_row(t, r)[: -len(" | |")])
    f = m["firing"]
    print(f"\n{name}: firing, at the default settings and at each correction_min_about\n")
    print(
        "| settings | unrelated: fired | unrelated: first | trial: fired | trial: first "
        "| trial: withdrawn shown | related: fired | related: first | related: withdrawn shown |"
    )
    print("|---|---:|---:|---|---|---|---:|---:|---:|")
    for label, r in [("default", f), *((f"about {t}", r) for t, r in f["sweep"].items())]:
        tr = r["trial"]
        print(f"| {label} | {r['unrelated_fired']} / {r['unrelated']} | "
              f"{r['unrelated_first']} / {r['unrelated']} | {tr['fired']} | {tr['first']} | "
              f"{len(tr['vetoes_shown'])} / {len(tr['vetoes'])} | "
              f"{r['related_fired']} / {r['related']} | {r['related_first']} / {r['related']} | "
              f"{r['related_leaked']} / {r['related']} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "corrections.json")
    ap.add_argument("--base", type=Path, help="also run the cases on the code in this checkout")
    ap.add_argument(
        "--part",
        choices=[*PARTS, "all"],
        default="all",
        help="print only this part, with its vetoes case by case",
    )
    ap.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    m = measure()
    if args.raw:
        print(json.dumps(m))
        return
    runs = {"after": m}
    if args.base is not None:
        env = dict(os.environ, PYTHONPATH=str(args.base.resolve()))
        out = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--raw"],
            env=env, cwd=args.base, capture_output=True, text=True, check=True,
        )  # fmt: skip
        runs = {"before": json.loads(out.stdout), "after": m}
    n = {p: part(CASES).count(p) for p in PARTS}
    print(f"{len(CASES)} cases ({n['tune']} tuned on, {n['held']} + {n['fresh']} held out), "
          f"{sum(len(c.want) for c in CASES)} chunks to veto over "
          f"{sum(bool(c.want) for c in CASES)} cases")  # fmt: skip
    for name, r in runs.items():
        show(name, r, args.part)
    if args.part != "all":
        print(f"\nper case ({args.part}):")
        for c in m["cases"]:
            if c["part"] == args.part:
                miss, extra = (
                    sorted(set(c["want"]) - set(c["vetoed"])),
                    sorted(set(c["vetoed"]) - set(c["want"])),
                )
                mark = "ok " if not miss and not extra else "BAD"
                print(f"{mark} [{c['category']}] {c['correction']!r}: missed {miss} extra {extra}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(runs, indent=1) + "\n")


if __name__ == "__main__":
    main()
