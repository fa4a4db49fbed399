"""Does learning pay on real work? Repeated LoCoMo questions with agent-style feedback.

Over ``../shared/bench/locomo-dev/`` (or ``--data``), with a fresh brain per conversation
built through the Python API, shipped settings unless ``--rule`` says otherwise:

    cold   every question once, nothing learned (the reference for every comparison)
    P1     every question R times (one fixed shuffled order per conversation, seeded), each
           answer followed by feedback as an agent would give it:
             scalar  a self outcome: +1 when the fired context holds an evidence line, else -1
             used    the same, plus the ids of the fired chunks that hold evidence as ``used``
    P2     each question once in file order with the same scalar feedback, compared question
           by question with the cold pass (learning must not hurt what it has not seen)

Transfer (``--protocol p3,p4,p5``, ``locomo_transfer.py``; each once per ``--feedback``,
scalar and/or used, 3 training rounds; asking to test records nothing and learns nothing):

    P3     siblings: per conversation a seeded split into train and test questions, each
           test question sharing an evidence line with a train question and differing
           from every train question in text; after training, each test question once,
           compared with the cold pass (R@2k, full@2k, context chars, fired recall, the
           share that followed a route), overall, per category and for the routed ones
    P4     rewordings: after training every question, each asked once as is (``same``)
           and in four reworded forms (``transfer_rewords.py``: order, polite, drop,
           synonym): the share that followed a route and its own route, R@2k vs its final
           training round and vs cold, context chars reworded / final round
    P5     parameters: six slot templates over ``examples/workspace`` (``transfer_params
           .py``) learned with 3 values, asked with 5 new ones: routed share, fired set
           equal to / containing / Jaccard >= 0.5 with the learned one, chars vs cold

Per round: mean context chars (the fired nodes' text), fired nodes, evidence recall of the
fired context, R@2k and full@2k (the shared evaluator's scoring functions, on the answer's
results with top 50), with paired 95 % bootstrap intervals for round R vs cold and P2 vs
cold, overall and per category, and the wall time. Runs are deterministic (a fixed clock,
seeded orders and resampling): two runs write identical ``records.jsonl``.

    .venv/bin/python benchmarks/locomo_learning.py                    # all, ~1 min
    .venv/bin/python benchmarks/locomo_learning.py --convs 1 --rounds 5   # a quick look
    .venv/bin/python benchmarks/locomo_learning.py --rule pg          # the published rule
    .venv/bin/python benchmarks/locomo_learning.py --protocol p3,p4,p5 --rule route \
        --feedback both                                # transfer, ~1 min; JSON per feedback
    .venv/bin/python benchmarks/locomo_learning.py --protocol p3,p4,p5 --convs 1 \
        --out /tmp/transfer                           # a quick look, ~10 s

P1/P2 write ``records.jsonl`` and ``summary.md`` into ``--out`` (default
``results/locomo_learning``); P3-P5 write ``p3-<feedback>.json`` (p4, p5), ``transfer.md``
and ``transfer-records.jsonl`` (not in git) into ``--out`` (default
``results/locomo_transfer/<rule>``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from ocb import Brain  # noqa: E402
from ocb_events.clock import TickClock  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "bench" / "locomo-dev"
DEFAULT_OUT = HERE / "results" / "locomo_learning"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
TOP = 50
METRICS = ("chars", "fired", "fired_recall", "r2k", "full2k")


def evaluator(data: Path) -> ModuleType:
    """The shared evaluator's module (its scoring functions are the definition)."""
    spec = importlib.util.spec_from_file_location("locomo_evaluate", data / "tools" / "evaluate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Conv:
    def __init__(self, root: Path) -> None:
        self.name = root.name
        self.workspace = root / "workspace"
        qs = [json.loads(line) for line in (root / "queries.jsonl").read_text().splitlines()]
        self.queries = [q for q in qs if q.get("evidence")]


class Scorer:
    def __init__(self, ev: ModuleType, conv: Conv) -> None:
        self.ev = ev
        self.ws = str(conv.workspace)

    def lines(self, q: dict) -> list[tuple[str, int]]:
        return list(dict.fromkeys((e["path"], int(e["line"])) for e in q["evidence"]))

    def covers(self, source: str, p: str, x: int) -> bool:
        parsed = self.ev.parse_source(source, self.ws)
        return parsed is not None and parsed[0] == p and parsed[1] <= x <= parsed[2]

    def score(self, brain: Brain, q: dict, ans: Any) -> tuple[dict, list[str]]:
        """The question's metrics, and the fired chunks that hold evidence."""
        ev = self.lines(q)
        fired = [brain.graph.nodes[n] for n in ans.fired]
        used = [n.id for n in fired if any(self.covers(n.source, p, x) for p, x in ev)]
        hit = {i for i, (p, x) in enumerate(ev) for n in fired if self.covers(n.source, p, x)}
        results = [{"source": h.source, "text": h.text} for h in ans.results]
        cov, _, _ = self.ev.budget_coverage(ev, results, 2000, self.ws)
        rec = {
            "qid": q["qid"],
            "category": q["category"],
            "chars": ans.context_chars,
            "fired": len(ans.fired),
            "fired_recall": len(hit) / len(ev),
            "r2k": len(cov) / len(ev),
            "full2k": 1.0 if len(cov) == len(ev) else 0.0,
        }
        return rec, used


def build(conv: Conv, path: Path, settings: dict[str, str]) -> None:
    """A brain of the conversation with ``settings`` recorded (``embedder``: the
    embedder it is built with)."""
    init_brain(path, conv.workspace, settings).close()


def init_brain(path: Path, workspace: Path, settings: dict[str, str]) -> Brain:
    brain, _ = Brain.init(
        path, workspace, clock=TickClock(), embedder=settings.get("embedder") or None
    )
    for key, value in sorted(settings.items()):
        if key != "embedder":
            brain.set_config(key, value)
    return brain


def open_copy(base: Path, dest: Path) -> Brain:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(base, dest)
    return Brain(dest, clock=TickClock(start_ns=10**18))


def give_feedback(brain: Brain, ans: Any, used: list[str], feedback: str, rule: str | None) -> None:
    """The agent's feedback on an answer (``none``, ``scalar`` or ``used``): +1 when
    ``used`` (the fired chunks that held what was asked) is not empty, else -1."""
    if feedback != "none":
        outcome = 1.0 if used else -1.0
        extra: dict[str, Any] = {"used": used} if feedback == "used" and used else {}
        brain.learn(outcome, trace_id=ans.trace_id, source="self", rule=rule, **extra)


def ask(brain: Brain, scorer: Scorer, q: dict, feedback: str, rule: str | None) -> dict:
    """Ask one question, and give the feedback of ``feedback`` (none, scalar or used)."""
    ans = brain.query(q["question"], top=TOP, record=feedback != "none")
    rec, used = scorer.score(brain, q, ans)
    give_feedback(brain, ans, used, feedback, rule)
    return rec


def run_conv(
    conv: Conv, ev: ModuleType, work: Path, rounds: int, seed: int, rule: str | None,
    variants: list[str], settings: dict[str, str], p2: bool = True,
) -> list[dict]:  # fmt: skip
    scorer = Scorer(ev, conv)
    base = work / conv.name / "base"
    build(conv, base, settings)
    out: list[dict] = []
    brain = open_copy(base, work / conv.name / "cold")
    for q in conv.queries:
        out.append({"pass": "cold", "round": 0, **ask(brain, scorer, q, "none", rule)})
    brain.close()
    order = list(conv.queries)
    random.Random(f"{seed}:{conv.name}").shuffle(order)
    for variant in variants:
        brain = open_copy(base, work / conv.name / variant)
        for r in range(1, rounds + 1):
            for q in order:
                out.append(
                    {"pass": f"P1-{variant}", "round": r, **ask(brain, scorer, q, variant, rule)}
                )
            print(f"  {conv.name} P1-{variant} round {r}/{rounds}", file=sys.stderr, flush=True)
        brain.close()
    if p2:
        brain = open_copy(base, work / conv.name / "p2")
        for q in conv.queries:
            out.append({"pass": "P2", "round": 1, **ask(brain, scorer, q, "scalar", rule)})
        brain.close()
    shutil.rmtree(work / conv.name)
    return out


def paired_ci(a: np.ndarray, b: np.ndarray, seed: int, n: int = 2000) -> tuple[float, float, float]:
    """Mean of b - a with a paired 95 % bootstrap interval."""
    d = b - a
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), size=(n, len(d)))
    means = d[idx].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def by_pass(records: list[dict], name: str, rnd: int) -> dict[str, dict]:
    return {r["qid"]: r for r in records if r["pass"] == name and r["round"] == rnd}


def round_table(records: list[dict], name: str, rounds: int) -> list[str]:
    lines = [
        f"{name}: mean per question by round (round 0 = cold)",
        "",
        "| round | context chars | % of cold | fired nodes | fired recall | R@2k | full@2k |",
        "|---|---|---|---|---|---|---|",
    ]
    cold = by_pass(records, "cold", 0)
    base_chars = float(np.mean([r["chars"] for r in cold.values()]))
    for rnd in range(rounds + 1):
        rows = cold if rnd == 0 else by_pass(records, name, rnd)
        if not rows:
            continue
        m = {k: float(np.mean([r[k] for r in rows.values()])) for k in METRICS}
        lines.append(
            f"| {rnd} | {m['chars']:,.0f} | {100 * m['chars'] / base_chars:.1f} % | "
            f"{m['fired']:.2f} | {m['fired_recall']:.3f} | {m['r2k']:.3f} | {m['full2k']:.3f} |"
        )
    return lines + [""]


def compare(records: list[dict], name: str, rnd: int, seed: int) -> list[str]:
    """Paired differences (pass - cold) with 95 % intervals, overall and per category."""
    cold = by_pass(records, "cold", 0)
    other = by_pass(records, name, rnd)
    qids = sorted(other)
    lines = [
        f"{name} round {rnd} vs cold: mean difference [95 % paired bootstrap]",
        "",
        "| category | n | context chars ratio | fired recall | R@2k | full@2k |",
        "|---|---|---|---|---|---|",
    ]
    cats: list[tuple[str, list[str]]] = [("all", qids)]
    cats += [
        (f"{c}-{nm}", [q for q in qids if cold[q]["category"] == c]) for c, nm in CATEGORIES.items()
    ]
    for label, qs in cats:
        if not qs:
            continue
        cells = [label, str(len(qs))]
        ratio = np.mean([other[q]["chars"] for q in qs]) / np.mean([cold[q]["chars"] for q in qs])
        cells.append(f"{ratio:.3f}")
        for k in ("fired_recall", "r2k", "full2k"):
            a = np.array([cold[q][k] for q in qs])
            b = np.array([other[q][k] for q in qs])
            d, lo, hi = paired_ci(a, b, seed)
            cells.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def run_learning(
    args: argparse.Namespace, ev: ModuleType, convs: list[Conv], settings: dict[str, str],
    protocols: set[str],
) -> None:  # fmt: skip
    """P1 and P2 (with the cold pass): records.jsonl and summary.md in ``--out``."""
    variants = [v for v in args.variants.split(",") if v] if "p1" in protocols else []
    p2 = "p2" in protocols
    t0 = time.perf_counter()
    records: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="ocb-locomo-learning-") as tmp:
        for conv in convs:
            print(f"{conv.name}: {len(conv.queries)} questions", file=sys.stderr, flush=True)
            records += run_conv(
                conv, ev, Path(tmp), args.rounds, args.seed, args.rule, variants, settings, p2
            )
    wall = time.perf_counter() - t0
    out = (args.out or DEFAULT_OUT).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "records.jsonl", "w") as fh:
        for r in records:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    md = [
        f"# Learning on LoCoMo dev ({', '.join(c.name for c in convs)}; "
        f"{len(by_pass(records, 'cold', 0))} questions; rule {args.rule or 'default'}; "
        f"{args.rounds} rounds; seed {args.seed}"
        + "".join(f"; {k}={v}" for k, v in sorted(settings.items()))
        + ")",
        "",
    ]
    for v in variants:
        md += round_table(records, f"P1-{v}", args.rounds)
        md += compare(records, f"P1-{v}", args.rounds, args.seed)
    if p2:
        md += compare(records, "P2", 1, args.seed)
    md.append(f"wall time: {wall:.0f} s")
    text = "\n".join(md) + "\n"
    (out / "summary.md").write_text(text)
    print(text)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo dev folder")
    ap.add_argument(
        "--out", type=Path, default=None,
        help="output folder (default results/locomo_learning for P1/P2, "
        "results/locomo_transfer/<rule> for P3-P5)",
    )  # fmt: skip
    ap.add_argument("--convs", default="", help="conversation indices, e.g. 0-3 or 1,2")
    ap.add_argument(
        "--protocol", default="p1,p2",
        help="protocols to run: p1,p2 (default) and/or p3,p4,p5 (transfer)",
    )  # fmt: skip
    ap.add_argument("--rounds", type=int, default=10, help="P1 rounds (default 10)")
    ap.add_argument("--seed", type=int, default=7, help="seed of the orders and the bootstrap")
    ap.add_argument("--rule", default=None, help="learning rule (default: the brain's)")
    ap.add_argument(
        "--embedder", default="", help="the brains' embedder (default hash; e.g. minilm)"
    )
    ap.add_argument(
        "--variants", default="scalar,used", help="P1 feedback variants (default scalar,used)"
    )
    ap.add_argument(
        "--feedback", default="both", choices=("scalar", "used", "both"),
        help="P3-P5 feedback (default both: each protocol once per feedback)",
    )  # fmt: skip
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="a setting recorded in every brain first (repeatable), e.g. routes.explore=3",
    )  # fmt: skip
    return ap


def conversations(
    ap: argparse.ArgumentParser, data: Path, picked: str
) -> tuple[ModuleType, list[Conv]]:
    """The shared evaluator of the ``data`` folder and its conversations (``picked``:
    indices such as 0-3 or 1,2; all when empty), or an argument error."""
    data = data.resolve()
    if not (data / "tools" / "evaluate.py").is_file():
        ap.error(f"{data} has no tools/evaluate.py (pass --data)")
    ev = evaluator(data)
    wanted = ev.parse_int_list(picked) if picked else None
    roots = sorted(p for p in data.glob("conv-*") if p.is_dir())
    return ev, [Conv(p) for p in roots if wanted is None or int(p.name.split("-")[1]) in wanted]


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    protocols = {p.strip().lower() for p in args.protocol.split(",") if p.strip()}
    if not protocols or protocols - {"p1", "p2", "p3", "p4", "p5"}:
        ap.error(f"--protocol {args.protocol!r}: pick from p1,p2,p3,p4,p5")
    settings = dict(kv.split("=", 1) for kv in args.set)
    if args.rule:  # the brain's rule too: a rule may act when asking (transfer borrows)
        settings.setdefault("learning.rule", args.rule)
    if args.embedder:
        settings["embedder"] = args.embedder
    ev, convs = conversations(ap, args.data, args.convs)
    if protocols & {"p1", "p2"}:
        run_learning(args, ev, convs, settings, protocols)
    if protocols & {"p3", "p4", "p5"}:
        import locomo_transfer  # the same directory; it imports this module's helpers

        locomo_transfer.run(args, ev, convs, settings, protocols)
    return 0


if __name__ == "__main__":
    sys.exit(main())
