"""The ``reflect`` command (registered on ``ocb.cli.app.app``) and its renderers.

JSON (``--json``): ``{"seq", "since_ns", "since", "priority": [fact ids], "changes":
[{"path", "change", "subject", "before", "after", "supporting", "contradicting",
"sources"}], "written": [paths]}``. ``seq`` is 0 when nothing changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ocb.cli.app import BrainOpt, JsonOpt, _out, _warn, app, handled

if TYPE_CHECKING:
    from ocb.memory.reflect import ReflectItem, ReflectReport


@app.command()
@handled
def reflect(
    brain: BrainOpt,
    since: Annotated[
        str, typer.Option(help="Facts recalled since then are priority (30d, 2w, 12h or a date).")
    ] = "7d",
    as_json: JsonOpt = False,
) -> None:
    """Rewrite entity summaries and move opinion confidence (only under bank/).

    \b
    Example:
      ocb reflect --brain B --since 7d
      ocb reflect --brain B --since 2026-11-14 --json
    """
    from ocb.brain import Brain
    from ocb.memory.reflect import reflect as run

    with Brain(brain, warn=_warn) as b:
        report = run(b, since)
    _out(report, as_json, reflect_text, reflect_json)


def reflect_json(r: ReflectReport) -> dict[str, Any]:
    import msgspec

    out: dict[str, Any] = msgspec.to_builtins(r)
    return out


def _item_text(x: ReflectItem) -> list[str]:
    if x.change == "opinion_confidence":
        lines = [f"  {x.path}: opinion {x.subject} confidence {x.before} -> {x.after}"]
        sup = ", ".join(x.supporting) or "none"
        con = ", ".join(x.contradicting) or "none"
        lines.append(f"    supporting: {sup}; contradicting: {con}")
        lines.append(f"    evidence: {', '.join(x.sources)}")
        return lines
    return [
        f"  {x.path}: summary of {x.subject}",
        f"    before: {x.before.splitlines()[0] if x.before else '(none)'}",
        f"    after: {x.after.splitlines()[0]}",
        f"    sources: {', '.join(x.sources)}",
    ]


def reflect_text(r: ReflectReport) -> str:
    head = f"{len(r.priority)} priority fact(s) since {r.since}"
    if not r.changes:
        return f"nothing to reflect: {head}; nothing written or recorded"
    lines = [f"reflected on {head}: {len(r.changes)} change(s), recorded at seq {r.seq}"]
    for x in r.changes:
        lines += _item_text(x)
    lines.append("wrote " + ", ".join(r.written))
    return "\n".join(lines)
