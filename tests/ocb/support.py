"""Builders shared by the brain tests: the example workspace, a brain's files as bytes,
questions asked and rewarded, and random command workloads (hypothesis strategies
and the runner that applies them to a brain)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from ocb.brain import Brain
from ocb.graph.teach import teach
from ocb.upkeep.maintain import maintain
from ocb.upkeep.weights import NS_PER_DAY
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import EdgeDeltas, EdgesUpdated

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
"""The example workspace (never written: tests copy it)."""


def dormant_update(brain: Brain) -> EdgesUpdated:
    """A decay that leaves every edge of ``brain`` dormant (its weight down by 60 %):
    health then finds brain death and proposes a lower habitual bound."""
    kill = tuple(
        EdgeDeltas(
            source=src,
            targets=tuple(sorted(ts)),
            deltas=tuple(-ts[t].weight * 0.6 for t in sorted(ts)),
        )
        for src, ts in sorted(brain.graph.out.items())
    )
    return EdgesUpdated(updates=kill, rule="decay", cause_seq=0)


def fresh_copy(dest: Path) -> Path:
    """A pristine copy of the example workspace at ``dest`` (anything there before is
    removed)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(EXAMPLE, dest)
    return dest


def build_example(path: Path, workspace: Path) -> Path:
    """The example brain: created with the default ``TickClock()`` and synced with
    ``workspace`` (a copy of the example), then closed."""
    with Brain.create(path, clock=TickClock()) as b:
        b.sync(workspace)
    return path


QUESTIONS = [
    "how do I roll back a bad deploy",
    "who is on call this week",
    "how do we tune postgres",
]


VOCAB = [
    "deploy",
    "rollback",
    "database",
    "migration",
    "alert",
    "pager",
    "cache",
    "queue",
    "token",
    "billing",
    "search",
    "index",
]


def tree_bytes(path: Path) -> dict[str, bytes]:
    """Every file of a brain but its disposable search cache."""
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and "cache" not in p.parts
    }


words = st.lists(st.sampled_from(VOCAB), min_size=3, max_size=12).map(" ".join)
sections = st.lists(st.tuples(st.sampled_from(VOCAB), words), min_size=1, max_size=4)
workspaces = st.lists(sections, min_size=2, max_size=3)
rewards = st.sampled_from([-1.0, -0.5, 0.25, 1.0])
rules = st.sampled_from([None, "transfer", "route", "pg", "heuristic"])
sources = st.sampled_from(["human", "self", "harvester", "teacher"])
ops = st.one_of(
    st.tuples(st.just("query"), words, st.sampled_from(["", "c1", "c2"])),
    st.tuples(st.just("trace"), rewards, rules, sources, st.sampled_from([None, 0.3])),
    st.tuples(st.just("chat"), rewards, rules, sources, st.just(None)),
    st.tuples(st.just("fired"), rewards, rules, sources, st.just(None)),
    st.tuples(
        st.just("config"),
        st.sampled_from(
            [
                ("learning.eta", 0.3),
                ("learning.rule", "heuristic"),
                ("learning.rule", "pg"),
                ("learning.baseline_rate", 0.0),
                ("learning.gamma", 0.5),
                ("learning.weight_self", 0.9),
                ("traversal.reflex", 0.45),
            ]
        ),
    ),
    st.tuples(st.just("maintain"), st.sampled_from(["decay", "scale", "decay,scale,prune"])),
    st.tuples(st.just("label"), st.sampled_from([-0.5, 0.8])),
    st.tuples(st.just("correct")),
    st.tuples(st.just("retract"), st.sampled_from(["outcome", "chat", "label", "injection"])),
    st.tuples(st.just("edit"), st.sampled_from(["typo", "sentence", "rename"])),
)


def write_workspace(root: Path, files: list[list[tuple[str, str]]]) -> None:
    root.mkdir()
    for i, secs in enumerate(files):
        text = "".join(f"## {head} {j}\n\n{body}.\n\n" for j, (head, body) in enumerate(secs))
        (root / f"note{i}.md").write_text(f"# Note {i}\n\n{text}")


def label(b: Brain, trace_id: str, score: float) -> int:
    """Label the first decision of a trace (its first candidate); the label's seq or 0."""
    steps = b.trace(trace_id).steps
    if not steps or not steps[0].candidates:
        return 0
    first = steps[0]
    line = {"trace_id": trace_id, "node": first.node, "hop": first.hop}
    line["scores"] = {first.candidates[0].target: score}  # type: ignore[assignment]
    return teach(b.store, [json.dumps(line)], apply=True, relevance=True).first_seq


def take_back(b: Brain, what: str, last: dict[str, Any]) -> None:
    """Retract the newest outcome (by seq or by chat), label or injection, if any."""
    keys = {"outcome": "outcomes", "label": "labels", "injection": "injections"}
    held = last.get(keys.get(what, ""), [])
    try:
        if what == "chat" and last.get("chats"):
            b.retract(chat_id=sorted(last["chats"])[0], reason="wrong chat")
        elif what == "injection" and held:
            b.retract(node_id=held.pop())
        elif held:
            b.retract(seq=held.pop())
    except InputError:  # taken back already (by chat), or its trace gave no outcome
        pass


def run_op(b: Brain, op: tuple[Any, ...], clock: TickClock, last: dict[str, Any]) -> None:
    kind = op[0]
    if kind in ("trace", "chat", "fired", "label", "correct") and "answer" not in last:
        run_op(b, ("query", " ".join(VOCAB[:4]), "c1"), clock, last)
    answer = last.get("answer")
    if kind == "retract":
        take_back(b, op[1], last)
    elif kind == "label":
        seq = label(b, answer.trace_id, op[1])
        last["labels"] = last.get("labels", []) + ([seq] if seq else [])
    elif kind == "correct" and answer.fired:
        fix = b.inject("CORRECTION", f"fix {b.log.last_seq}", targets=[answer.fired[-1]])
        last["injections"] = last.get("injections", []) + [fix.node_id]
    elif kind == "query":
        last["answer"] = b.query(op[1], chat_id=op[2])
        last["chats"] = last.get("chats", set()) | ({op[2]} if op[2] else set())
    elif kind == "config":
        b.set_config(*op[1])
    elif kind == "maintain":
        clock.advance(3 * NS_PER_DAY)
        maintain(b.store, op[1], clock=clock, budget=0.7, prune_below=0.05)
    elif kind == "edit":
        edit_workspace(b, op[1])
    elif answer is not None:
        learn_op(b, op, answer, last)


def edit_workspace(b: Brain, how: str) -> None:
    """Edit the first note of the brain's workspace and sync: a typo in (or a sentence
    added to) its last line of text, or a rename (to ``moved-<name>`` and back)."""
    root = Path(b.graph.workspace)
    first = sorted(root.rglob("*.md"))[0]
    if how == "rename":
        name = first.name.removeprefix("moved-")
        first.rename(first.with_name(name if name != first.name else "moved-" + name))
    else:
        lines = first.read_text().splitlines()
        i = max(j for j, line in enumerate(lines) if line and not line.startswith("#"))
        lines[i] = lines[i].replace("e", "3", 1) if how == "typo" else lines[i] + " Noted."
        first.write_text("".join(line + "\n" for line in lines))
    b.sync(root)


def learn_op(b: Brain, op: tuple[Any, ...], answer: Any, last: dict[str, Any]) -> None:
    kind, reward, rule, source, eta = op
    extra = {} if eta is None else {"eta": eta}
    report = None
    if kind == "trace":
        # under the route rule, a good answer with a rate op also names what it used
        used = answer.fired[:1] if reward > 0 and rule in (None, "route") and eta else []
        report = b.learn(
            reward,
            trace_id=answer.trace_id,
            rule=rule,
            source=source,
            again=True,
            used=[u for u in used if u in b.graph.nodes],
            **extra,
        )
    elif kind == "chat" and last.get("chats"):
        chat = sorted(last["chats"])[0]
        report = b.learn(reward, chat_id=chat, rule=rule, source=source, again=True)
    elif kind == "fired" and len(answer.fired) > 1:
        report = b.learn(reward, fired_ids=answer.fired[:3], rule=rule, source=source)
    if report is not None:
        last["outcomes"] = last.get("outcomes", []) + [report.outcome_seq]


def ask_and_learn(brain: Brain, rounds: int, reward: float = 1.0, rule: str = "pg") -> None:
    """Ask the three questions in turn and score each trace under ``rule`` (by default
    the policy gradient, which moves the edges walked), then its first fired nodes."""
    for i in range(rounds):
        answer = brain.query(QUESTIONS[i % 3], chat_id=f"c{i % 2}")
        brain.learn(reward, trace_id=answer.trace_id, rule=rule)
        if len(answer.fired) > 1:
            brain.learn(reward / 2, fired_ids=answer.fired[:3], source="self")


def chunk_view(b: Brain) -> dict[str, list[tuple[int, int, str]]]:
    """Per workspace file: its chunks' line ranges and texts, in order (what a fresh
    init of the same workspace must give, whatever the ids)."""
    out: dict[str, list[tuple[int, int, str]]] = {}
    for n in sorted(b.graph.nodes.values(), key=lambda n: (n.path, n.start_line, n.id)):
        if n.path:
            out.setdefault(n.path, []).append((n.start_line, n.end_line, n.text))
    return out
