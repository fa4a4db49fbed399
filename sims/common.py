"""What every simulation shares: a real brain in a scratch directory, built from a
generated Markdown workspace and driven through the public API, so everything it does
is an event in its log; the rebuild check; and the JSON (+ optional PNG) result.

A simulation module defines ``NAME``, ``CLAIM`` and ``run(quick: bool) -> Result``.
It is deterministic: fixed seeds, a ticking clock, no wall time in its decisions.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from ocb.brain import Brain
from ocb_events.clock import TickClock
from ocb_events.schema import EdgesCreated, EdgeSpec
from replay import PROJECTIONS, rebuild

RESULTS = Path(__file__).resolve().parent / "results"
"""Where full runs write their results (committed: the published numbers)."""
QUICK_RESULTS = RESULTS / "quick"
"""Where quick runs write theirs by default (ignored by git)."""
DAY_NS = 86_400 * 10**9


class Result(msgspec.Struct):
    """The outcome of one simulation: its claim, whether it held, the numbers behind
    it, the series for its figure, and whether a rebuild equals the live brain."""

    name: str
    claim: str
    passed: bool
    metrics: dict[str, Any]
    series: dict[str, list[float]] = msgspec.field(default_factory=dict)
    rebuild_equal: bool = False
    quick: bool = False
    detail: str = ""


def write_workspace(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (relative path -> Markdown) under ``root``."""
    for rel, text in sorted(files.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@contextmanager
def scratch_brain(
    files: Mapping[str, str],
    settings: Mapping[str, object] | None = None,
    clock: TickClock | None = None,
    **brain_kw: Any,
) -> Iterator[Brain]:
    """A brain built from ``files`` in a temporary directory, with ``settings``
    recorded as config events first; removed afterwards. Pass ``clock`` to move time
    on (``clock.advance(DAY_NS)``) between maintenance runs."""
    tmp = Path(tempfile.mkdtemp(prefix="ocb-sim-"))
    try:
        ws = write_workspace(tmp / "workspace", files)
        brain = Brain(
            tmp / "brain",
            create=True,
            clock=clock or TickClock(step_ns=10**9),
            durability="none",
            **brain_kw,
        )
        with brain:
            for key, value in sorted((settings or {}).items()):
                brain.set_config(key, value)
            brain.sync(ws)
            yield brain
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def connect(brain: Brain, edges: Sequence[tuple[str, str, float]], kind: str = "sim") -> None:
    """Record edges the simulation's scenario needs (set to the given weights)."""
    specs = tuple(EdgeSpec(source=a, target=b, weight=w, kind=kind) for a, b, w in edges)
    brain.store.record(
        [EdgesCreated(edges=specs, cause="sim")], "sim", expected_seq=brain.log.last_seq
    )


def rebuild_equal(brain: Brain) -> bool:
    """Whether folding the whole log gives, byte for byte, the brain's live state."""
    full = rebuild(brain.log)
    return all(
        PROJECTIONS[n].snapshot(full[n]) == PROJECTIONS[n].snapshot(brain.state(n))
        for n in sorted(PROJECTIONS)
    )


def weight(brain: Brain, source: str, target: str) -> float:
    """The weight of an edge (0 when it does not exist)."""
    edge = brain.graph.out.get(source, {}).get(target)
    return edge.weight if edge is not None else 0.0


def save(result: Result, out: Path | None = None) -> Path:
    """Write the result as JSON (and a PNG of its series when matplotlib is there) under
    ``out``: by default the committed results of a full run, or the ignored folder of
    quick runs for a quick one."""
    out = out or (QUICK_RESULTS if result.quick else RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{result.name}.json"
    path.write_text(json.dumps(msgspec.to_builtins(result), indent=1) + "\n", encoding="utf-8")
    if result.series:
        _plot(result, out / f"{result.name}.png")
    return path


def _plot(result: Result, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return  # the plotting extra is optional
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, ys in sorted(result.series.items()):
        ax.plot(range(1, len(ys) + 1), ys, label=label)
    ax.set_title(result.name)
    ax.set_xlabel("query")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def paragraphs(words: Sequence[str], n: int, seed: int, length: int = 40) -> list[str]:
    """``n`` deterministic paragraphs of ``length`` words drawn from ``words``."""
    import random

    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(length)) + "." for _ in range(n)]


SENTENCES = [
    "Check {a} before {b}, then confirm {c}.",
    "When {a} looks wrong, compare {b} with {c}.",
    "{A} depends on {b}; change {c} last.",
    "We fixed {a} by tuning {b} and {c}.",
    "Never change {a} while {b} runs; {c} breaks.",
    "Review {a}, {b} and {c} together.",
]


def topic_files(
    topics: Mapping[str, Sequence[str]], n_files: int, sections: int, seed: int
) -> dict[str, str]:
    """``n_files`` Markdown files (``<topic>/<topic>-<i>.md``, topics in turn), each of
    ``sections`` ``##`` sections of short sentences drawn from its topic's words."""
    import random

    rng = random.Random(seed)
    names = sorted(topics)
    files = {}
    for i in range(n_files):
        topic = names[i % len(names)]
        words = list(topics[topic])
        parts = [f"# {topic.title()} notes {i}"]
        for _ in range(sections):
            head = " ".join(rng.sample(words, 2))
            body = []
            for _ in range(rng.randint(2, 4)):
                a, b, c = rng.sample(words, 3)
                body.append(rng.choice(SENTENCES).format(a=a, A=a.capitalize(), b=b, c=c))
            parts.append(f"## {head.capitalize()}\n\n" + " ".join(body))
        files[f"{topic}/{topic}-{i:04d}.md"] = "\n\n".join(parts) + "\n"
    return files
