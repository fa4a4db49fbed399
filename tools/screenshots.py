"""The README's screenshots of ``ocb ui``, taken from the example workspace so that they
stay true: builds a brain from ``examples/workspace`` in a scratch directory, asks and
scores a few questions (so that the history, the learned edges and the routes have
something to show), states a current fact, then opens each page in a real headless
Chromium (``tools/browser/setup.sh``) and writes ``docs/images/ui-<page>.png`` (and
``ui-walk.png``, the Ask page's walk).

    .venv/bin/python tools/screenshots.py            # about 30 s
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ocb.brain import Brain  # noqa: E402
from ocb_events.clock import TickClock  # noqa: E402
from tests.ocb.ui.window import LAUNCH_ARGS, chromium, window  # noqa: E402

QUESTIONS = [
    ("how do I roll back a bad deploy", 1.0),
    ("how do I roll back a bad deploy", 1.0),
    ("who is on call this week", 1.0),
    ("how long is the canary bake time", -1.0),
    ("how long is the canary bake time", 1.0),
    ("how do I roll back a bad deploy", 1.0),
]
ASK = "how do I roll back a bad deploy"


def build(dest: Path) -> Path:
    """The example brain, with a few scored questions and a current fact."""
    brain = dest / "brain"
    with Brain.create(brain, clock=TickClock()) as b:
        b.sync(ROOT / "examples" / "workspace")
        for text, reward in QUESTIONS:
            answer = b.query(text, actor="ui")
            b.learn(reward, trace_id=answer.trace_id, rule="pg", actor="ui")
        b.kg_set("Deploy", "canary_bake", "30 minutes", "runbooks/deploy.md#L3", actor="ui")
    return brain


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ocb-shots-") as tmp:
        brain = build(Path(tmp))
        with Brain(brain, writer=False) as b:
            step = next(r for r in b.events(types=["query_traced"])).event
            edge = (step.steps[0].node, step.steps[0].chosen)  # type: ignore[attr-defined]
        pages = {
            "ask": f"/ask?q={ASK.replace(' ', '+')}",
            "history": "/history?seq=40",
            "why": f"/why?source={edge[0]}&target={edge[1]}",
            "memory": "/memory?entity=Deploy",
            "health": "/health",
        }
        with window(brain, writes=True) as w, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for name, path in pages.items():
                sep = "&" if "?" in path else "?"
                page.goto(f"{w.base}{path}{sep}token={w.token}")
                page.wait_for_selector(f"main[data-ready='{name}']", timeout=60_000)
                shot = args.out / f"ui-{name}.png"
                page.screenshot(path=str(shot), full_page=False)
                print(shot)
                if name == "ask":  # and the walk, further down the page
                    shot = args.out / "ui-walk.png"
                    page.locator("svg.walk").screenshot(path=str(shot))
                    print(shot)
            browser.close()


if __name__ == "__main__":
    main()
