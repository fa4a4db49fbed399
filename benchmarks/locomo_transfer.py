"""Does learning carry over to related questions? P3 and P4 of ``locomo_learning`` on
LoCoMo dev, and the entry of the transfer protocols (P5 is in ``transfer_params``).

    P3 siblings   per conversation a seeded split of the questions: every test question
                  shares an evidence line with a train question and has a text of its
                  own. Train questions 3 rounds with feedback, then each test question
                  once without, compared question by question with the cold pass
    P4 rewordings every question 3 rounds with feedback, then each asked once (no
                  feedback) in four reworded forms (``transfer_rewords``) and once as is
                  (``same``), compared with its own final training round

Feedback is ``locomo_learning``'s (scalar or used); nothing is learned while a test or
reworded question is asked (no trace is recorded). Run through ``locomo_learning.py
--protocol p3,p4,p5``; writes ``p3-<feedback>.json`` ... and ``transfer.md`` into the
output folder, and the per-question ``transfer-records.jsonl`` (not in git).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import transfer_params
import transfer_rewords as rw
from locomo_learning import (
    CATEGORIES,
    HERE,
    TOP,
    Conv,
    Scorer,
    build,
    give_feedback,
    open_copy,
)
from transfer_stats import ci, diff, mean, pick, r4, write_json

from ocb import Brain

ROUNDS = 3
REWORDS = ("same", *rw.KINDS)
DIFF_METRICS = ("fired_recall", "r2k", "full2k")


def ask(
    brain: Brain, scorer: Scorer, q: dict, feedback: str, rule: str | None, text: str = ""
) -> dict:
    """``locomo_learning.ask`` with the route followed, and ``text`` asked in place of
    the question when given (scored against the question's evidence)."""
    ans = brain.query(text or q["question"], top=TOP, record=feedback != "none")
    rec, used = scorer.score(brain, q, ans)
    give_feedback(brain, ans, used, feedback, rule)
    return {**rec, "route": ans.route, "mode": ans.route_mode}


def train(
    brain: Brain, scorer: Scorer, qs: list[dict], seed: str, feedback: str, rule: str | None,
    tag: str,
) -> list[dict]:  # fmt: skip
    """``ROUNDS`` rounds of ``qs`` in one seeded shuffled order, each with feedback."""
    order = list(qs)
    random.Random(seed).shuffle(order)
    out = []
    for r in range(1, ROUNDS + 1):
        out += [{"pass": tag, "round": r, **ask(brain, scorer, q, feedback, rule)} for q in order]
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def split_siblings(scorer: Scorer, queries: list[dict], seed: str) -> tuple[list, list]:
    """Train and test questions (file order). In a seeded order, a question becomes a
    test question when a sibling (a question sharing an evidence line, with another
    text) is not one, and that sibling is then kept for training (unless another already
    is); a test question left without a train sibling, or with a train question of the
    same text, moves to train until none is. The rest train."""
    lines = {q["qid"]: set(scorer.lines(q)) for q in queries}
    text = {q["qid"]: _norm(q["question"]) for q in queries}
    sibs = {
        q: [o for o in lines if lines[q] & lines[o] and text[o] != text[q]] for q in lines
    }  # fmt: skip
    order = sorted(q for q in lines if sibs[q])
    random.Random(seed).shuffle(order)
    role: dict[str, str] = {}
    for q in order:
        anchors = [o for o in sibs[q] if role.get(o) != "test"]
        if role.get(q) == "train" or not anchors:
            continue
        role[q] = "test"
        if not any(role.get(o) == "train" for o in anchors):
            role[anchors[0]] = "train"
    test = {q for q, r in role.items() if r == "test"}
    while True:
        train_qs = [q for q in queries if q["qid"] not in test]
        seen = set().union(*(lines[q["qid"]] for q in train_qs))
        texts = {text[q["qid"]] for q in train_qs}
        bad = {qid for qid in test if not lines[qid] & seen or text[qid] in texts}
        if not bad:
            return train_qs, [q for q in queries if q["qid"] in test]
        test -= bad


def run_p3(
    conv: Conv, scorer: Scorer, base: Path, work: Path, seed: int, feedback: str,
    rule: str | None,
) -> list[dict]:  # fmt: skip
    train_qs, test_qs = split_siblings(scorer, conv.queries, f"{seed}:{conv.name}:p3")
    brain = open_copy(base, work / f"p3-{feedback}")
    out = train(brain, scorer, train_qs, f"{seed}:{conv.name}", feedback, rule, "P3-train")
    out += [{"pass": "P3-test", "round": 0, **ask(brain, scorer, q, "none", rule)} for q in test_qs]
    brain.close()
    return out


def run_p4(
    conv: Conv, scorer: Scorer, base: Path, work: Path, seed: int, feedback: str,
    rule: str | None,
) -> list[dict]:  # fmt: skip
    brain = open_copy(base, work / f"p4-{feedback}")
    out = train(brain, scorer, conv.queries, f"{seed}:{conv.name}", feedback, rule, "P4-train")
    for kind in REWORDS:
        for q in conv.queries:
            rng = random.Random(f"{seed}:{q['qid']}:{kind}")
            text = q["question"] if kind == "same" else rw.reword(kind, q["question"], rng)
            if text is None:
                continue
            rec = ask(brain, scorer, q, "none", rule, text)
            out.append({"pass": f"P4-{kind}", "round": 0, "text": text, **rec})
    brain.close()
    return out


def run_conv(
    conv: Conv, ev: ModuleType, work: Path, seed: int, rule: str | None, feedbacks: list[str],
    protocols: set[str], settings: dict[str, str],
) -> list[dict]:  # fmt: skip
    """The cold pass, then P3 and P4 per feedback, each on a copy of one fresh brain."""
    scorer = Scorer(ev, conv)
    work = work / conv.name
    base = work / "base"
    build(conv, base, settings)
    brain = open_copy(base, work / "cold")
    out = [
        {"pass": "cold", "round": 0, **ask(brain, scorer, q, "none", rule)} for q in conv.queries
    ]
    brain.close()
    for fb in feedbacks:
        recs: list[dict] = []
        if "p3" in protocols:
            recs += run_p3(conv, scorer, base, work, seed, fb, rule)
        if "p4" in protocols:
            recs += run_p4(conv, scorer, base, work, seed, fb, rule)
        out += [{**r, "feedback": fb} for r in recs]
        print(f"  {conv.name} {fb} done", file=sys.stderr, flush=True)
    shutil.rmtree(work)
    return out


# --------------------------------------------------------------------------- summaries


def _groups(qids: list[str], rows: dict[str, dict]) -> list[tuple[str, list[str]]]:
    out = [("all", qids)]
    out += [
        (f"{c}-{n}", [q for q in qids if rows[q]["category"] == c]) for c, n in CATEGORIES.items()
    ]
    return [(label, qs) for label, qs in out if qs]


def p3_summary(records: list[dict], feedback: str, seed: int) -> dict[str, Any]:
    cold = pick(records, "cold", None)
    test = pick(records, "P3-test", feedback)
    n_train = len(pick(records, "P3-train", feedback, 1))
    qids = sorted(test)
    groups = _groups(qids, test) + [("routed", [q for q in qids if test[q]["route"]])]
    rows = {}
    for label, qs in groups:
        if not qs:
            continue
        chars_cold = float(np.mean([cold[q]["chars"] for q in qs]))
        chars = float(np.mean([test[q]["chars"] for q in qs]))
        rows[label] = {
            "n": len(qs),
            "routed": mean([bool(test[q]["route"]) for q in qs]),
            "chars_cold": r4(chars_cold),
            "chars": r4(chars),
            "chars_pct_of_cold": r4(100 * chars / chars_cold) if chars_cold else None,
        } | {
            k: diff([cold[q][k] for q in qs], [test[q][k] for q in qs], seed) for k in DIFF_METRICS
        }
    return {
        "protocol": "P3",
        "feedback": feedback,
        "train": n_train,
        "test": len(qids),
        "rows": rows,
    }


def _ratios(num: list[float], den: list[float]) -> dict[str, float | None]:
    pairs = [(a, b) for a, b in zip(num, den, strict=True) if b > 0]
    if not pairs:
        return {"median": None, "mean": None, "of_means": None}
    ratios = [a / b for a, b in pairs]
    return {
        "median": r4(np.median(ratios)),
        "mean": r4(np.mean(ratios)),
        "of_means": r4(np.mean([a for a, _ in pairs]) / np.mean([b for _, b in pairs])),
    }


def p4_summary(records: list[dict], feedback: str, seed: int) -> dict[str, Any]:
    cold = pick(records, "cold", None)
    trained = pick(records, "P4-train", feedback, ROUNDS)
    kinds = {}
    for kind in REWORDS:
        rew = pick(records, f"P4-{kind}", feedback)
        qs = sorted(rew)
        kinds[kind] = {
            "asked": len(qs),
            "skipped": len(trained) - len(qs),
            "routed": mean([bool(rew[q]["route"]) for q in qs]),
            "own_route": mean([rew[q]["route"] == trained[q]["route"] != "" for q in qs]),
            "r2k_vs_trained": diff(
                [trained[q]["r2k"] for q in qs], [rew[q]["r2k"] for q in qs], seed
            ),
            "r2k_vs_cold": diff([cold[q]["r2k"] for q in qs], [rew[q]["r2k"] for q in qs], seed),
            "chars_ratio": _ratios(
                [rew[q]["chars"] for q in qs], [trained[q]["chars"] for q in qs]
            ),
        }
    return {"protocol": "P4", "feedback": feedback, "questions": len(trained), "kinds": kinds}


# --------------------------------------------------------------------------- tables


def p3_table(s: dict[str, Any]) -> list[str]:
    lines = [
        f"P3 siblings, {s['feedback']} feedback: {s['train']} train questions "
        f"({ROUNDS} rounds), {s['test']} test questions asked once after, vs cold "
        "(mean difference [95 % paired bootstrap])",
        "",
        "| test questions | n | routed | context chars (cold) | % of cold | fired recall | "
        "R@2k cold | R@2k | R@2k diff | full@2k diff |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in s["rows"].items():
        pct = "n/a" if r["chars_pct_of_cold"] is None else f"{r['chars_pct_of_cold']:.1f} %"
        lines.append(
            f"| {label} | {r['n']} | {100 * r['routed']:.1f} % | {r['chars']:,.0f} "
            f"({r['chars_cold']:,.0f}) | {pct} | {ci(r['fired_recall'])} | {r['r2k']['a']:.3f} | "
            f"{r['r2k']['b']:.3f} | {ci(r['r2k'])} | {ci(r['full2k'])} |"
        )
    return lines + [""]


def p4_table(s: dict[str, Any]) -> list[str]:
    lines = [
        f"P4 rewordings, {s['feedback']} feedback: {s['questions']} questions trained "
        f"{ROUNDS} rounds, then each reworded form asked once; R@2k vs the question's own "
        "final training round and vs cold [95 % paired bootstrap]; context chars ratio "
        "reworded / final round",
        "",
        "| kind | asked | skipped | routed | own route | R@2k final round | R@2k reworded | "
        "diff vs final round | diff vs cold | chars ratio median | mean | of means |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, k in s["kinds"].items():
        cr = k["chars_ratio"]
        fmt = ["n/a" if cr[x] is None else f"{cr[x]:.2f}" for x in ("median", "mean", "of_means")]
        lines.append(
            f"| {kind} | {k['asked']} | {k['skipped']} | {100 * k['routed']:.1f} % | "
            f"{100 * k['own_route']:.1f} % | {k['r2k_vs_trained']['a']:.3f} | "
            f"{k['r2k_vs_trained']['b']:.3f} | {ci(k['r2k_vs_trained'])} | "
            f"{ci(k['r2k_vs_cold'])} | " + " | ".join(fmt) + " |"
        )
    return lines + [""]


# --------------------------------------------------------------------------- entry


def run(
    args: argparse.Namespace, ev: ModuleType, convs: list[Conv], settings: dict[str, str],
    protocols: set[str],
) -> None:  # fmt: skip
    """P3, P4 (over ``convs``) and P5 (the example workspace), per feedback: their JSON
    summaries, records and Markdown tables in ``--out`` (default per rule)."""
    feedbacks = ["scalar", "used"] if args.feedback == "both" else [args.feedback]
    rule_name = args.rule or "default"
    out = (args.out or HERE / "results" / "locomo_transfer" / rule_name).resolve()
    out.mkdir(parents=True, exist_ok=True)
    head = {"conversations": [c.name for c in convs], "rule": rule_name, "seed": args.seed}
    head |= {"settings": dict(sorted(settings.items()))}
    t0 = time.perf_counter()
    records: list[dict] = []
    if protocols & {"p3", "p4"}:
        with tempfile.TemporaryDirectory(prefix="ocb-locomo-transfer-") as tmp:
            for conv in convs:
                print(f"{conv.name}: {len(conv.queries)} questions", file=sys.stderr, flush=True)
                records += run_conv(
                    conv, ev, Path(tmp), args.seed, args.rule, feedbacks, protocols, settings
                )
    if "p5" in protocols:
        records += transfer_params.run(args.seed, args.rule, feedbacks, settings)
    md = [
        f"# Transfer of learning ({', '.join(head['conversations'])}; rule {rule_name}; "
        f"seed {args.seed}" + "".join(f"; {k}={v}" for k, v in sorted(settings.items())) + ")",
        "",
    ]
    for fb in feedbacks:
        for proto, summarize, table in (
            ("p3", p3_summary, p3_table),
            ("p4", p4_summary, p4_table),
            ("p5", transfer_params.summary, transfer_params.table),
        ):
            if proto in protocols:
                top = {k: v for k, v in head.items() if proto != "p5" or k != "conversations"}
                s = top | summarize(records, fb, args.seed)
                write_json(out / f"{proto}-{fb}.json", s)
                md += table(s)
    with open(out / "transfer-records.jsonl", "w") as fh:
        fh.writelines(json.dumps(r, sort_keys=True) + "\n" for r in records)
    md.append(f"wall time: {time.perf_counter() - t0:.0f} s")
    text = "\n".join(md) + "\n"
    (out / "transfer.md").write_text(text)
    print(text)
