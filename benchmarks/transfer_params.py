"""P5 of ``locomo_learning``: does what a question taught carry over to the same
question with another value in its slot? A task family over ``examples/workspace``.

Six templates, each with the file(s) that answer it whatever the value (read from the
workspace; see ``TEMPLATES``). One brain (shipped settings, ``--set`` applied) learns
every template with its three training values: ``ROUNDS`` rounds of one seeded shuffled
order of all (template, value) asks, each followed by the agent's feedback, where the
chunks "used" are the fired chunks of the template's relevant files (``scalar``: +1 when
there is one, else -1; ``used``: the same with those chunks as ``used``). Then each
template is asked with five new values, once each, without feedback (nothing recorded),
and the same new-value questions once on the cold brain.

Per template and overall: the share of new-value asks that followed a route, and a
route of the same template's training asks; whose fired set equals, contains (is a
superset of) or overlaps at Jaccard >= 0.5 the fired set of the template's last
training ask (the learned context); the mean Jaccard; the share whose context holds a
chunk of a relevant file (vs cold, paired bootstrap); and the context chars vs cold.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
from locomo_learning import HERE, TOP, give_feedback, init_brain, open_copy
from transfer_stats import ci, diff, mean, r4

from ocb import Brain

WORKSPACE = HERE.parent / "examples" / "workspace"
ROUNDS = 3
JACCARD = 0.5


class Template(msgspec.Struct, frozen=True):
    name: str
    text: str  # "{v}" is the slot
    relevant: tuple[str, ...]  # workspace paths whose chunks answer it, whatever the value
    train: tuple[str, ...]
    new: tuple[str, ...]


TEMPLATES = (
    # rollback.md: when to roll back, helm rollback, re-deploy the previous tag, verify
    Template(
        "rollback", "How do I roll back a bad deploy of build {v}?",
        ("runbooks/rollback.md",),
        ("3.15.0", "3.14.2", "3.16.1"), ("3.17.0", "3.12.4", "3.16.3", "3.13.9", "3.18.2"),
    ),
    # deploy.md: the five stages (build, staging, smoke, canary, production) per service
    Template(
        "deploy", "What are the steps to deploy {v} to production?",
        ("runbooks/deploy.md",),
        ("lumen-api", "lumen-worker", "lumen-web"),
        ("lumen-billing", "lumen-search", "lumen-exports", "lumen-notify", "lumen-gateway"),
    ),
    # feature-flags.md: the ramp (internal, 5 %, 25 %, 50 %, 100 %) and make flag-set
    Template(
        "flag", "How do I ramp up the feature flag {v} in production?",
        ("runbooks/feature-flags.md",),
        ("insights.summary-v2", "exports.csv-streaming", "tagging.multilingual"),
        ("web.new-nav", "billing.invoices-v3", "search.fuzzy-match", "reports.pdf-export",
         "auth.passkeys"),
    ),
    # database-migrations.md ("Stuck migration") and postgres-tuning.md (lock waits)
    Template(
        "migration", "Migration {v} is stuck waiting for a lock, what do I do?",
        ("runbooks/database-migrations.md", "notes/postgres-tuning.md"),
        ("0087_add_responses_sentiment_score", "0088_add_surveys_locale",
         "0089_index_response_tags"),
        ("0091_add_responses_language", "0092_drop_legacy_scores", "0093_add_tenants_plan",
         "0094_index_surveys_owner", "0095_add_exports_status"),
    ),
    # hotfix.md: the hotfix lane (branch from the production tag, ci-hotfix, canary)
    Template(
        "hotfix", "How do we ship an urgent hotfix for the {v} bug?",
        ("runbooks/hotfix.md",),
        ("CSV export", "digest email", "login page"),
        ("survey builder", "auto-tagging", "webhook delivery", "billing page", "SSO redirect"),
    ),
    # alerting.md (the alert table's first moves) and on-call.md ("Common pages")
    Template(
        "alert", "The {v} alert is firing, what is the first move?",
        ("notes/alerting.md", "runbooks/on-call.md"),
        ("LumenApi5xxRateHigh", "PgBouncerWaitingClients", "WorkerQueueBacklog"),
        ("LumenApiLatencyP99High", "PostgresReplicationLag", "DigestJobFailed", "ExportsStuck",
         "CertificateExpiringSoon"),
    ),
)  # fmt: skip


def ask(brain: Brain, t: Template, value: str, feedback: str, rule: str | None) -> dict:
    """One ask of template ``t`` with ``value``, and the agent's feedback on it."""
    ans = brain.query(t.text.format(v=value), top=TOP, record=feedback != "none")
    nodes = brain.graph.nodes
    rel = [n for n in ans.fired if nodes[n].source.split("#", 1)[0] in t.relevant]
    give_feedback(brain, ans, rel, feedback, rule)
    return {
        "qid": f"{t.name}:{value}",
        "template": t.name,
        "chars": ans.context_chars,
        "fired_ids": sorted(ans.fired),
        "relevant_hit": 1.0 if rel else 0.0,
        "relevant_share": len(rel) / len(ans.fired) if ans.fired else 0.0,
        "route": ans.route,
        "mode": ans.route_mode,
    }


def run(seed: int, rule: str | None, feedbacks: list[str], settings: dict[str, str]) -> list[dict]:
    """The cold asks, then per feedback the training and the new-value asks."""
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="ocb-transfer-params-") as tmp:
        base = Path(tmp) / "base"
        init_brain(base, WORKSPACE, settings).close()
        brain = open_copy(base, Path(tmp) / "cold")
        for t in TEMPLATES:
            for v in t.train + t.new:
                out.append({"pass": "P5-cold", "round": 0, **ask(brain, t, v, "none", rule)})
        brain.close()
        order = [(t, v) for t in TEMPLATES for v in t.train]
        random.Random(f"{seed}:p5").shuffle(order)
        for fb in feedbacks:
            brain = open_copy(base, Path(tmp) / f"p5-{fb}")
            for r in range(1, ROUNDS + 1):
                for t, v in order:
                    rec = ask(brain, t, v, fb, rule)
                    out.append({"pass": "P5-train", "round": r, "feedback": fb, **rec})
            for t in TEMPLATES:
                for v in t.new:
                    rec = ask(brain, t, v, "none", rule)
                    out.append({"pass": "P5-new", "round": 0, "feedback": fb, **rec})
            brain.close()
            print(f"  P5 {fb} done", file=sys.stderr, flush=True)
    return out


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _row(news: list[dict], cold: dict[str, dict], last: dict[str, set], routes: dict, seed: int):
    """The metrics of new-value asks ``news``."""
    learned = [last[r["template"]] for r in news]
    fired = [set(r["fired_ids"]) for r in news]
    jac = [_jaccard(f, lrn) for f, lrn in zip(fired, learned, strict=True)]
    chars = mean([r["chars"] for r in news])
    chars_cold = mean([cold[r["qid"]]["chars"] for r in news])
    return {
        "n": len(news),
        "routed": mean([bool(r["route"]) for r in news]),
        "own_route": mean([r["route"] in routes[r["template"]] for r in news]),
        "equal": mean([f == lrn for f, lrn in zip(fired, learned, strict=True)]),
        "contains": mean([bool(lrn) and lrn <= f for f, lrn in zip(fired, learned, strict=True)]),
        "jaccard_ge": mean([j >= JACCARD for j in jac]),
        "jaccard_mean": mean(jac),
        "learned_chunks": mean([len(lrn) for lrn in learned]),
        "chars": chars,
        "chars_cold": chars_cold,
        "chars_pct_of_cold": r4(100 * chars / chars_cold) if chars_cold else None,
        "relevant_hit": diff(
            [cold[r["qid"]]["relevant_hit"] for r in news], [r["relevant_hit"] for r in news], seed
        ),
        "relevant_share": diff(
            [cold[r["qid"]]["relevant_share"] for r in news],
            [r["relevant_share"] for r in news],
            seed,
        ),
    }


def summary(records: list[dict], feedback: str, seed: int) -> dict[str, Any]:
    cold = {r["qid"]: r for r in records if r["pass"] == "P5-cold"}
    train = [r for r in records if r["pass"] == "P5-train" and r["feedback"] == feedback]
    news = [r for r in records if r["pass"] == "P5-new" and r["feedback"] == feedback]
    last = {r["template"]: set(r["fired_ids"]) for r in train}  # the last one wins
    routes = {t.name: {r["route"] for r in train if r["template"] == t.name} for t in TEMPLATES}
    routes = {name: ids - {""} for name, ids in routes.items()}
    final = [r for r in train if r["round"] == ROUNDS]
    rows = {t.name: _row([r for r in news if r["template"] == t.name], cold, last, routes, seed)
            for t in TEMPLATES}  # fmt: skip
    rows["all"] = _row(news, cold, last, routes, seed)
    return {
        "protocol": "P5",
        "feedback": feedback,
        "workspace": "examples/workspace",
        "templates": {t.name: msgspec.to_builtins(t) for t in TEMPLATES},
        "trained_final_round": {
            "routed": mean([bool(r["route"]) for r in final]),
            "relevant_hit": mean([r["relevant_hit"] for r in final]),
            "chars": mean([r["chars"] for r in final]),
        },
        "rows": rows,
    }


def table(s: dict[str, Any]) -> list[str]:
    f = s["trained_final_round"]
    lines = [
        f"P5 parameters ({s['workspace']}), {s['feedback']} feedback: {len(TEMPLATES)} "
        f"templates x 3 values trained {ROUNDS} rounds (final round: {100 * f['routed']:.0f} % "
        f"routed, relevant file fired {100 * f['relevant_hit']:.0f} %, {f['chars']:,.0f} "
        "chars); each then asked with 5 new values. Learned = the fired set of the "
        "template's last training ask; relevant share = share of the fired chunks from the "
        "template's file(s), (cold) and diff vs cold [95 % paired bootstrap]",
        "",
        "| template | n | routed | own-template route | = learned | contains learned | "
        f"Jaccard >= {JACCARD} | mean Jaccard | chars (cold) | % of cold | relevant share (cold) | "
        "relevant share diff |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in s["rows"].items():
        pct = "n/a" if r["chars_pct_of_cold"] is None else f"{r['chars_pct_of_cold']:.1f} %"
        lines.append(
            f"| {name} | {r['n']} | {100 * r['routed']:.0f} % | {100 * r['own_route']:.0f} % | "
            f"{100 * r['equal']:.0f} % | {100 * r['contains']:.0f} % | "
            f"{100 * r['jaccard_ge']:.0f} % | {r['jaccard_mean']:.2f} | {r['chars']:,.0f} "
            f"({r['chars_cold']:,.0f}) | {pct} | {r['relevant_share']['b']:.2f} "
            f"({r['relevant_share']['a']:.2f}) | {ci(r['relevant_share'])} |"
        )
    return lines + [""]
