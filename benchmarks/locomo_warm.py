"""How much of the repeated-question gain does ``ocb warm`` give before the first live
question? LoCoMo dev, transcripts made from the conversations.

Over ``../shared/bench/locomo-dev/`` (or ``--data``), a fresh brain per conversation
(shipped settings), the shared evaluator's scoring
(``locomo_learning.Scorer``: R@2k and full@2k on the answer's results with top 50,
context chars of the fired nodes). Per conversation:

    cold      every question once, nothing learned (the reference)
    live      every question R times in one seeded shuffled order, each answer followed
              by ``locomo_learning``'s ``used`` feedback (+1 with the fired chunks that
              hold evidence as ``used``, else -1): rounds 2 (one feedback) and R
    warm-qa   a brain warmed with ``ocb warm`` from transcripts of an agent that was
              asked every dev question before: one session per daily log of the
              conversation, holding the questions whose last evidence line is in that
              log; each answer is LoCoMo's reference answer citing its evidence lines
              (``memory/2023-05-08.md#L7``) after a ``memory_get`` of each; then every
              question asked once (no feedback): the warmed brain's first live ask
    warm-qa-cited-if-found
              the same, but an answer cites (and reads) its evidence only when the cold
              brain's context held some of it: what warming gives without the negative
              ``missed`` outcomes (the lines the context lacked are not named)
    warm-dialogue
              a brain warmed from the conversation's own turns as sessions (one per daily
              log): the first speaker's lines are the user's messages, the other's the
              answers; an answer is evidence only as the line it quotes (a fired chunk
              holding eight of its words in a row); no dev question is in them

The gain a pass keeps is its mean minus cold's over live round R's mean minus cold's,
for R@2k and for the context reduction (1 - chars / cold chars), with a 95 % bootstrap
interval over questions (2,000 resamples, seeded); differences to cold are paired 95 %
bootstraps. Dev numbers: the questions are the ones the transcripts held.

    .venv/bin/python benchmarks/locomo_warm.py                 # all four conversations
    .venv/bin/python benchmarks/locomo_warm.py --convs 0 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from locomo_learning import (  # noqa: E402  (the same directory)
    CATEGORIES,
    Conv,
    Scorer,
    ask,
    build,
    conversations,
    open_copy,
    paired_ci,
)

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "bench" / "locomo-dev"
DEFAULT_OUT = HERE / "results" / "locomo_warm"
WARMS = ("warm-qa", "warm-qa-cited-if-found", "warm-dialogue")


# --------------------------------------------------------------------------- transcripts


def _session(path: Path, exchanges: list[tuple[str, str, list[tuple[str, int, str]]]]) -> None:
    """An OpenClaw session file: per exchange the user's question, a ``memory_get`` of
    each line read (path, line, text), and the answer."""
    header = {"type": "session", "version": 4, "id": path.stem, "cwd": "/workspace"}
    rows: list[dict[str, Any]] = [header | {"timestamp": "2026-11-26T00:00:00.000Z"}]

    def add(message: dict[str, Any]) -> None:
        rows.append({"type": "message", "id": f"m{len(rows)}",
                     "parentId": rows[-1].get("id") if len(rows) > 1 else None,
                     "message": message})  # fmt: skip

    for question, answer, reads in exchanges:
        add({"role": "user", "content": question})
        for i, (p, line, text) in enumerate(reads):
            call = {"type": "toolCall", "id": f"c{i}", "name": "memory_get",
                    "arguments": {"path": p, "from": line, "lines": 1}}  # fmt: skip
            add({"role": "assistant", "content": [call], "stopReason": "toolUse"})
            details = {"path": p, "from": line, "to": line, "text": text}
            add({"role": "toolResult", "toolCallId": f"c{i}", "toolName": "memory_get",
                 "content": [{"type": "text", "text": json.dumps(details)}],
                 "details": details})  # fmt: skip
        add({"role": "assistant", "content": [{"type": "text", "text": answer}],
             "stopReason": "stop"})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _line(conv: Conv, path: str, n: int) -> str:
    return (conv.workspace / path).read_text().splitlines()[n - 1]


def qa_sessions(conv: Conv, out: Path, found: dict[str, bool] | None) -> list[Path]:
    """One session per daily log: its questions (by their last evidence line), each
    answered with the reference answer citing its evidence lines after reading them;
    with ``found``, only the questions whose evidence the cold context held cite."""
    by_log: dict[str, list[dict]] = defaultdict(list)
    for q in conv.queries:
        last = max((e["path"], int(e["line"])) for e in q["evidence"])
        by_log[last[0]].append(q)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for log in sorted(by_log):
        exchanges = []
        for q in by_log[log]:
            lines = sorted({(e["path"], int(e["line"])) for e in q["evidence"]})
            if found is not None and not found[q["qid"]]:
                exchanges.append((q["question"], str(q["answer"]), []))
                continue
            cites = ", ".join(f"{p}#L{n}" for p, n in lines)
            reads = [(p, n, _line(conv, p, n)) for p, n in lines]
            exchanges.append((q["question"], f"{q['answer']} ({cites})", reads))
        path = out / f"{Path(log).stem}.jsonl"
        _session(path, exchanges)
        files.append(path)
    return files


def dialogue_sessions(conv: Conv, out: Path) -> list[Path]:
    """One session per daily log: the first speaker's lines as the user's messages,
    the other speaker's next lines as the answers."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for log in sorted((conv.workspace / "memory").glob("*.md")):
        turns = []
        for raw in log.read_text().splitlines():
            if raw.startswith("- ") and ": " in raw:
                speaker, _, text = raw[2:].partition(": ")
                turns.append((speaker.split(" ", 1)[-1], text))
        if not turns:
            continue
        user = turns[0][0]
        exchanges: list[tuple[str, str, list[tuple[str, int, str]]]] = []
        for speaker, text in turns:
            if speaker == user:
                exchanges.append((text, "", []))
            elif exchanges:
                q, a, r = exchanges[-1]
                exchanges[-1] = (q, f"{a}\n{text}".strip(), r)
        path = out / f"{log.stem}.jsonl"
        _session(path, [x for x in exchanges if x[1]])
        files.append(path)
    return files


# --------------------------------------------------------------------------- passes


def run_conv(
    conv: Conv, ev: Any, work: Path, rounds: int, seed: int
) -> tuple[list[dict], list[dict]]:
    """The question records of every pass, and one row per warm (its report and time)."""
    scorer = Scorer(ev, conv)
    base = work / conv.name / "base"
    build(conv, base, {})
    out: list[dict] = []
    found: dict[str, bool] = {}
    brain = open_copy(base, work / conv.name / "cold")
    for q in conv.queries:
        ans = brain.query(q["question"], top=50, record=False)
        rec, used = scorer.score(brain, q, ans)
        found[q["qid"]] = bool(used)
        out.append({"pass": "cold", "round": 0, **rec})
    brain.close()
    order = list(conv.queries)
    random.Random(f"{seed}:{conv.name}").shuffle(order)
    brain = open_copy(base, work / conv.name / "live")
    for r in range(1, rounds + 1):
        for q in order:
            out.append({"pass": "live", "round": r, **ask(brain, scorer, q, "used", None)})
    brain.close()
    sessions = {
        "warm-qa": qa_sessions(conv, work / conv.name / "qa", None),
        "warm-qa-cited-if-found": qa_sessions(conv, work / conv.name / "qa-found", found),
        "warm-dialogue": dialogue_sessions(conv, work / conv.name / "dialogue"),
    }
    warms = []
    for name in WARMS:
        brain = open_copy(base, work / conv.name / name)
        t0 = time.perf_counter()
        report = brain.warm_sessions(sessions[name])
        secs = time.perf_counter() - t0
        warms.append({"conv": conv.name, "pass": name, "seconds": secs, "turns": report.turns,
                      "queries": report.queries, "used": report.used, "missed": report.missed,
                      "corrected": report.corrected, "none": report.unscored,
                      "candidates": report.candidates})  # fmt: skip
        again = brain.warm_sessions(sessions[name])
        assert again.queries == 0, f"{name}: a second warm recorded {again.queries} queries"
        for q in order:
            out.append({"pass": name, "round": 1, **ask(brain, scorer, q, "none", None)})
        brain.close()
    print(f"  {conv.name}: done", file=sys.stderr, flush=True)
    shutil.rmtree(work / conv.name)
    return out, warms


# --------------------------------------------------------------------------- tables


def rows_of(records: list[dict], name: str, rnd: int) -> dict[str, dict]:
    return {r["qid"]: r for r in records if r["pass"] == name and r["round"] == rnd}


def kept_share(
    cold: np.ndarray, live: np.ndarray, other: np.ndarray, seed: int, n: int = 2000
) -> tuple[float, float, float]:
    """(mean(other) - mean(cold)) / (mean(live) - mean(cold)), with a 95 % bootstrap
    interval over questions."""

    def share(idx: np.ndarray) -> np.ndarray:
        c, lv, o = cold[idx].mean(-1), live[idx].mean(-1), other[idx].mean(-1)
        return (o - c) / np.where(np.abs(lv - c) < 1e-12, np.nan, lv - c)

    rng = np.random.default_rng(seed)
    got = share(rng.integers(0, len(cold), size=(n, len(cold))))
    point = float(share(np.arange(len(cold))[None, :])[0])
    return point, float(np.nanpercentile(got, 2.5)), float(np.nanpercentile(got, 97.5))


def table(records: list[dict], rounds: int, seed: int) -> list[str]:
    cold = rows_of(records, "cold", 0)
    qids = sorted(cold)
    passes = [("live", 2, "live, round 2 (1 feedback)"), ("live", rounds, f"live, round {rounds}")]
    passes += [(w, 1, f"{w}, first ask") for w in WARMS]
    live = rows_of(records, "live", rounds)

    def col(rows: dict[str, dict], key: str) -> np.ndarray:
        return np.array([rows[q][key] for q in qids], dtype=float)

    c_chars, c_r2k = col(cold, "chars"), col(cold, "r2k")
    l_cut, l_r2k = 1 - col(live, "chars") / c_chars.mean(), col(live, "r2k")
    lines = [
        "| brain | context chars (% of cold) | R@2k | R@2k - cold [95 %] | full@2k - cold "
        "[95 %] | share of live's R@2k gain [95 %] | share of live's context cut [95 %] |",
        "|---|---|---|---|---|---|---|",
        f"| cold | {c_chars.mean():,.0f} (100 %) | {c_r2k.mean():.3f} | | | | |",
    ]
    for name, rnd, label in passes:
        rows = rows_of(records, name, rnd)
        chars, r2k = col(rows, "chars"), col(rows, "r2k")
        d, lo, hi = paired_ci(c_r2k, r2k, seed)
        f, flo, fhi = paired_ci(col(cold, "full2k"), col(rows, "full2k"), seed)
        g = kept_share(c_r2k, l_r2k, r2k, seed)
        cut = kept_share(np.zeros_like(c_chars), l_cut, 1 - chars / c_chars.mean(), seed)
        lines.append(
            f"| {label} | {chars.mean():,.0f} ({100 * chars.mean() / c_chars.mean():.1f} %) | "
            f"{r2k.mean():.3f} | {d:+.3f} [{lo:+.3f}, {hi:+.3f}] | {f:+.3f} [{flo:+.3f}, "
            f"{fhi:+.3f}] | {g[0]:.2f} [{g[1]:.2f}, {g[2]:.2f}] | {cut[0]:.2f} [{cut[1]:.2f}, "
            f"{cut[2]:.2f}] |"
        )
    return lines + [""]


def by_category(records: list[dict], rounds: int, seed: int) -> list[str]:
    cold = rows_of(records, "cold", 0)
    lines = ["R@2k - cold by category [95 %]", "",
             "| category | n | live round " + str(rounds) + " | warm-qa | warm-qa-cited-if-found |",
             "|---|---|---|---|---|"]  # fmt: skip
    for c, nm in CATEGORIES.items():
        qs = sorted(q for q in cold if cold[q]["category"] == c)
        cells = [f"{c}-{nm}", str(len(qs))]
        for name, rnd in (("live", rounds), ("warm-qa", 1), ("warm-qa-cited-if-found", 1)):
            rows = rows_of(records, name, rnd)
            a = np.array([cold[q]["r2k"] for q in qs])
            b = np.array([rows[q]["r2k"] for q in qs])
            d, lo, hi = paired_ci(a, b, seed)
            cells.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def warm_table(warms: list[dict]) -> list[str]:
    lines = [
        "| warm | turns | queries | +used | -missed | -corrected | no outcome | correction "
        "candidates | turns/s | second warm |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in WARMS:
        rows = [w for w in warms if w["pass"] == name]
        keys = ("turns", "queries", "used", "missed", "corrected", "none", "candidates", "seconds")
        s = {k: sum(w[k] for w in rows) for k in keys}
        lines.append(
            f"| {name} | {s['turns']} | {s['queries']} | {s['used']} | {s['missed']} | "
            f"{s['corrected']} | {s['none']} | {s['candidates']} | "
            f"{s['turns'] / s['seconds']:.0f} | 0 queries |"
        )
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo dev folder")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    ap.add_argument("--convs", default="", help="conversation indices, e.g. 0-3 or 1,2")
    ap.add_argument("--rounds", type=int, default=10, help="live rounds (default 10)")
    ap.add_argument("--seed", type=int, default=7, help="seed of the orders and the bootstrap")
    args = ap.parse_args(argv)
    ev, convs = conversations(ap, args.data, args.convs)
    t0 = time.perf_counter()
    records: list[dict] = []
    warms: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="ocb-locomo-warm-") as tmp:
        for conv in convs:
            print(f"{conv.name}: {len(conv.queries)} questions", file=sys.stderr, flush=True)
            got, w = run_conv(conv, ev, Path(tmp), args.rounds, args.seed)
            records += got
            warms += w
    wall = time.perf_counter() - t0
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "records.jsonl", "w") as fh:
        for r in records:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    n = len(rows_of(records, "cold", 0))
    md = [
        f"# Warming from transcripts, LoCoMo dev ({', '.join(c.name for c in convs)}; "
        f"{n} questions; live: {args.rounds} rounds of used feedback; seed {args.seed})",
        "",
        *table(records, args.rounds, args.seed),
        *by_category(records, args.rounds, args.seed),
        *warm_table(warms),
        f"wall time: {wall:.0f} s",
    ]
    text = "\n".join(md) + "\n"
    (out / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
