"""Would shortcut edges carry learning to sibling questions? A study on LoCoMo dev, in
P3's split (``locomo_transfer.split_siblings``), of the seeds' next milestone: an
outcome teaches shortcuts from the chunks its question seeded to the chunks its answer
used; a sibling question whose own seeds share chunks with a train question's reaches,
through those shortcuts, what the train question used.

Measured on cold rankings, before any rule is built on it: for each train question its
``--seeds`` best chunks and the evidence chunks among its 50 best (what ``used`` feedback
proves over a few rounds); for each test question the chunks those shortcuts reach,
scored by the seeds shared, kept only among its own ``--within`` best, inserted after its
own ``--after`` best. ``oracle`` keeps only the reached chunks that hold the test
question's evidence: the room there is; ``shortcuts`` is what a rule would do.

    .venv/bin/python benchmarks/transfer_shortcuts.py            # all of dev, ~20 s
    .venv/bin/python benchmarks/transfer_shortcuts.py --seeds 3,5 --after 1,2 --within 30
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from locomo_learning import HERE, TOP, Conv, Scorer, build, conversations, open_copy, paired_ci
from locomo_transfer import split_siblings

from ocb import Brain


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


class Case:
    """One conversation's cold rankings and its sibling split."""

    def __init__(self, conv: Conv, ev: object, work: Path, seed: int) -> None:
        self.scorer = Scorer(ev, conv)  # type: ignore[arg-type]
        self.ev = ev
        base = work / conv.name / "base"
        build(conv, base, {})
        brain: Brain = open_copy(base, work / conv.name / "cold")
        self.nodes = brain.graph.nodes
        self.ranked = {
            q["qid"]: [h.id for h in brain.query(q["question"], top=TOP, record=False).results]
            for q in conv.queries
        }
        brain.close()
        self.train, self.test = split_siblings(self.scorer, conv.queries, f"{seed}:{conv.name}:p3")

    def evidence(self, q: dict, ids: list[str]) -> list[str]:
        lines = self.scorer.lines(q)
        return [
            n for n in ids if any(self.scorer.covers(self.nodes[n].source, p, x) for p, x in lines)
        ]

    def r2k(self, q: dict, ids: list[str]) -> float:
        lines = self.scorer.lines(q)
        results = [{"source": self.nodes[n].source, "text": self.nodes[n].text} for n in ids]
        cov, _, _ = self.ev.budget_coverage(lines, results, 2000, self.scorer.ws)  # type: ignore[attr-defined]
        return len(cov) / len(lines)

    def run(self, k: int, after: int, within: int, oracle: bool) -> list[tuple[float, float]]:
        """(cold, with shortcuts) R@2k of every test question."""
        used = {t["qid"]: self.evidence(t, self.ranked[t["qid"]]) for t in self.train}
        seeds = {t["qid"]: set(self.ranked[t["qid"]][:k]) for t in self.train}
        out = []
        for q in self.test:
            ids = self.ranked[q["qid"]]
            mine = set(ids[:k])
            score: dict[str, int] = {}
            for t in self.train:
                shared = len(mine & seeds[t["qid"]])
                for n in used[t["qid"]] if shared else ():
                    score[n] = score.get(n, 0) + shared
            keep = set(ids[:within]) - set(ids[:after])
            if oracle:
                keep &= set(self.evidence(q, list(keep)))
            reached = sorted((n for n in score if n in keep), key=lambda n: (-score[n], n))
            ranked = ids[:after] + reached + [n for n in ids[after:] if n not in reached]
            out.append((self.r2k(q, ids), self.r2k(q, ranked)))
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared/bench/locomo-dev")
    ap.add_argument("--convs", default="", help="conversation indices, e.g. 0-3 (default all)")
    ap.add_argument("--seeds", default="3,5,8", help="seed chunks per question (comma list)")
    ap.add_argument("--after", default="1,2,3", help="own best chunks kept first (comma list)")
    ap.add_argument("--within", default="10,30", help="reached chunks kept among own best")
    ap.add_argument("--seed", type=int, default=7, help="seed of the split (P3's default)")
    args = ap.parse_args(argv)
    ev, convs = conversations(ap, args.data, args.convs)
    work = Path(tempfile.mkdtemp(prefix="ocb-shortcuts-"))
    try:
        cases = [Case(c, ev, work, args.seed) for c in convs]
    finally:
        shutil.rmtree(work)
    n = sum(len(c.test) for c in cases)
    print(f"test questions: {n} (siblings of {sum(len(c.train) for c in cases)} train)")
    print("| kind | seeds | after | within | cold R@2k | with | diff [95 % CI] | up | down |")
    print("|---|---|---|---|---|---|---|---|---|")
    for oracle in (True, False):
        for k in _ints(args.seeds):
            for after in _ints(args.after):
                for within in _ints(args.within):
                    pairs = [p for c in cases for p in c.run(k, after, within, oracle)]
                    a, b = (np.array(x, dtype=float) for x in zip(*pairs, strict=True))
                    d, lo, hi = paired_ci(a, b, args.seed)
                    print(
                        f"| {'oracle' if oracle else 'shortcuts'} | {k} | {after} | {within} "
                        f"| {a.mean():.3f} | {b.mean():.3f} | {d:+.3f} [{lo:+.3f}, {hi:+.3f}] "
                        f"| {int((b > a).sum())} | {int((b < a).sum())} |"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
