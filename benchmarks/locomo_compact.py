"""Compacting LoCoMo dev's older daily notes: what it saves, and what recall it keeps.

For each conversation (0-3 only) the workspace is indexed twice, each brain asked every
scored question with ``Brain.query(top=50)`` (what ``ocb query --top 50`` answers):

    before   the workspace as it is
    after    the same, then ``Brain.compact`` with the older half of its daily notes
             (those dated before the middle note's day) compacted: each turn line moves
             verbatim to its speaker's page ``bank/entities/<Name>.md``, the note keeps a
             short summary

Evidence lines name the original notes. After compaction a result on a bank page covers
the original lines its page lines were moved from (the moves ``compact`` reports), and a
result on a compacted note's summary covers none. R@2k walks the results in rank order
within 2,000 characters, the first result that does not fit cut to what is left, exactly
as the shared evaluator's ``budget_coverage`` (its ``prefix_lines`` reads the lines of
the workspace the result comes from). ΔR@2k has a 95 % paired bootstrap interval over
questions (2,000 resamples, seed 0).

    .venv/bin/python benchmarks/locomo_compact.py            # conversations 0-3, ~2 min
    .venv/bin/python benchmarks/locomo_compact.py --convs 0  # one conversation
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ocb.brain import Brain
from ocb.memory.compaction import daily_day
from ocb_events.clock import TickClock

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "bench" / "locomo-dev"
CONVS = (0, 1, 2, 3)  # the dev set: never any other conversation
BUDGET = 2000
TOP = 50
START_NS = 1_800_000_000_000_000_000  # 2027-01-15: every note is older than 30 days
Line = tuple[str, int]


def evaluator(data: Path) -> Any:
    """The shared evaluator's module (its scoring functions, same rules as locomo.py)."""
    spec = importlib.util.spec_from_file_location("locomo_evaluate", data / "tools" / "evaluate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def workspace_size(root: Path) -> tuple[int, int]:
    """(files, characters) of the Markdown under ``root``."""
    files = sorted(root.rglob("*.md"))
    return len(files), sum(len(p.read_text(encoding="utf-8")) for p in files)


def line_map(moves: Iterable[dict[str, str]]) -> dict[Line, Line]:
    """New (page, line) -> original (note, line), from compact's moves."""
    out: dict[Line, Line] = {}
    for m in moves:
        src, (a, _) = _span(m["source"])
        dst, (x, y) = _span(m["target"])
        for k in range(y - x + 1):
            out[(dst, x + k)] = (src, a + k)
    return out


def translator(mapping: dict[Line, Line], compacted: set[str]) -> Callable[[str, int], Line | None]:
    """The original line a result's line stands for (None: a compacted note's summary)."""

    def translate(path: str, line: int) -> Line | None:
        if path in compacted:
            return None
        return mapping.get((path, line), (path, line))

    return translate


def _span(source: str) -> tuple[str, tuple[int, int]]:
    path, lines = source.split("#L")
    a, _, b = lines.partition("-L")
    return path, (int(a), int(b or a))


def coverage(
    ev: list[Line],
    results: list[dict[str, Any]],
    workspace: Path,
    ev_mod: Any,
    translate: Callable[[str, int], Line | None],
) -> float:
    """Share of ``ev`` covered within BUDGET characters (``budget_coverage``'s walk, each
    covered line of a result translated to the line it stands for)."""
    covered: set[Line] = set()
    left = BUDGET
    for r in results:
        text, parsed = r["text"], ev_mod.parse_source(r["source"], str(workspace))
        if len(text) <= left:
            left -= len(text)
            lo, hi = (parsed[1], parsed[2]) if parsed else (1, 0)
        else:
            lo, hi = 1, 0
            if left > 0 and parsed is not None:
                lines = ev_mod.workspace_lines(str(workspace), parsed[0])
                lo, hi, _ = ev_mod.prefix_lines(text, left, parsed[1], parsed[2], lines)
            left = 0
        if parsed is not None and hi >= lo:
            hi = int(min(hi, lo + 10_000))
            for x in range(lo, hi + 1):
                t = translate(parsed[0], x)
                if t is not None:
                    covered.add(t)
        if left == 0:
            break
    return sum(e in covered for e in ev) / len(ev)


def ask(brain: Brain, questions: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    out = []
    for q in questions:
        a = brain.query(q["question"], top=TOP)
        out.append([{"source": h.source, "text": h.text} for h in a.results])
    return out


def run_conv(data: Path, k: int, tmp: Path, ev_mod: Any) -> dict[str, Any]:
    """Before/after recall and sizes of conversation ``k``."""
    src = data / f"conv-{k}" / "workspace"
    questions = [
        q
        for q in map(json.loads, (data / f"conv-{k}" / "queries.jsonl").read_text().splitlines())
        if q["evidence"]
    ]
    notes = sorted(p for p in (src / "memory").glob("*.md"))
    middle = daily_day(f"memory/{notes[len(notes) // 2].name}")
    assert middle is not None
    row: dict[str, Any] = {"conv": k, "notes": len(notes), "questions": len(questions)}
    per: dict[str, list[float]] = {}
    for phase in ("before", "after"):
        ws = tmp / f"conv-{k}-{phase}" / "workspace"
        shutil.copytree(src, ws)
        row[f"files_{phase}"], row[f"chars_{phase}"] = workspace_size(ws)
        t0 = time.perf_counter()
        clock = TickClock(start_ns=START_NS, step_ns=10**6)
        brain, _ = Brain.init(ws.parent / "brain", ws, clock=clock)
        mapping: dict[Line, Line] = {}
        compacted: set[str] = set()
        if phase == "after":
            report = brain.compact(middle.isoformat())
            mapping = line_map({"source": m.source, "target": m.target} for m in report.moves)
            compacted = set(report.notes)
            row["compacted_notes"] = len(report.notes)
            row["moves"], row["carried"] = len(report.moves), report.carried
            row["files_after"], row["chars_after"] = workspace_size(ws)
            row["build_s"] = round(time.perf_counter() - t0, 2)
        translate = translator(mapping, compacted)
        answers = ask(brain, questions)
        brain.close()
        per[phase] = [
            coverage([(e["path"], e["line"]) for e in q["evidence"]], res, ws, ev_mod, translate)
            for q, res in zip(questions, answers, strict=True)
        ]
        old = {f"memory/{p.name}" for p in notes[: len(notes) // 2]}
        row[f"in_old_{phase}"] = [any(e["path"] in old for e in q["evidence"]) for q in questions]
    row["r2k_before"], row["r2k_after"] = per["before"], per["after"]
    return row


def bootstrap(before: np.ndarray, after: np.ndarray, n: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(before), size=(n, len(before)))
    diffs = (after[idx] - before[idx]).mean(axis=1)
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return float(lo), float(hi)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| conv | notes compacted | files before -> after | chars before -> after "
        "| questions | R@2k before | R@2k after | ΔR@2k [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    every_b: list[float] = []
    every_a: list[float] = []
    for r in [*rows, None]:
        if r is None:
            if len(rows) < 2:
                break
            b, a = np.array(every_b), np.array(every_a)
            files = (sum(x["files_before"] for x in rows), sum(x["files_after"] for x in rows))
            chars = (sum(x["chars_before"] for x in rows), sum(x["chars_after"] for x in rows))
            notes = f"{sum(x['compacted_notes'] for x in rows)}/{sum(x['notes'] for x in rows)}"
            name = "all"
        else:
            b, a = np.array(r["r2k_before"]), np.array(r["r2k_after"])
            every_b += r["r2k_before"]
            every_a += r["r2k_after"]
            files, chars = (
                (r["files_before"], r["files_after"]),
                (r["chars_before"], r["chars_after"]),
            )
            notes, name = f"{r['compacted_notes']}/{r['notes']}", str(r["conv"])
        lo, hi = bootstrap(b, a)
        lines.append(
            f"| {name} | {notes} | {files[0]} -> {files[1]} | {chars[0]:,} -> {chars[1]:,} "
            f"| {len(b)} | {b.mean():.3f} | {a.mean():.3f} | {a.mean() - b.mean():+.3f} "
            f"[{lo:+.3f}, {hi:+.3f}] |"
        )
    return "\n".join(lines)


def old_table(rows: list[dict[str, Any]]) -> str:
    """R@2k of the questions whose evidence lies (partly) in the compacted notes."""
    b = np.array(
        [x for r in rows for x, o in zip(r["r2k_before"], r["in_old_before"], strict=True) if o]
    )
    a = np.array(
        [x for r in rows for x, o in zip(r["r2k_after"], r["in_old_after"], strict=True) if o]
    )
    if not len(b):
        return ""
    lo, hi = bootstrap(b, a)
    return (
        f"questions with evidence in a compacted note: {len(b)}; R@2k {b.mean():.3f} -> "
        f"{a.mean():.3f}, Δ {a.mean() - b.mean():+.3f} [{lo:+.3f}, {hi:+.3f}]"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo dev folder")
    ap.add_argument("--convs", default="0,1,2,3", help="conversations among 0-3, e.g. 0,2")
    ap.add_argument("--json", type=Path, help="also write the rows (per question) here")
    args = ap.parse_args(argv)
    convs = [int(c) for c in args.convs.split(",")]
    if any(c not in CONVS for c in convs):
        ap.error("only the dev conversations 0-3")
    ev_mod = evaluator(args.data)
    with tempfile.TemporaryDirectory(prefix="locomo-compact-") as tmp:
        rows = [run_conv(args.data, k, Path(tmp), ev_mod) for k in convs]
    print(f"LoCoMo dev, conversations {args.convs}: compacting the older half of the daily notes")
    print(f"(ocb query --top {TOP}; R@2k = evidence recall within {BUDGET:,} characters)\n")
    print(table(rows))
    print()
    print(old_table(rows))
    print(
        "moves: "
        + ", ".join(f"conv {r['conv']} {r['moves']} ({r['carried']} chunks kept ids, "
                    f"init+compact {r['build_s']} s)" for r in rows)
    )  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
