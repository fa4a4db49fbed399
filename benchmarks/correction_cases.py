"""The cases of ``bench_corrections.py``: corrections as a user would type them, over the
example workspace plus the notes in ``benchmarks/corrections_notes/`` (a thumbnails
runbook, an exports note and two daily logs holding advice that later turned out wrong).

Each case is a question asked in a chat, a correction of its answer, and the chunks
holding what the correction takes back (often none: then every veto is a false
positive). A chunk is to be vetoed when it states, as advice or as a current fact, what
the correction says is not so; a chunk that reports what happened ("the hotfix that
skipped CI") or says the same as the correction is not. The wanted chunks were read off
the chunk texts, never off what a rule vetoes.

Every third case of each category (the 3rd, 6th, 9th ...) is held out: it was not looked
at while the rule was first tuned, and the benchmark reports it apart (``held``). The
``FRESH`` cases are a second held-out batch, written after the first had been looked at
and before the rule was revised again (``fresh``).
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    category: str
    question: str
    correction: str
    want: tuple[str, ...]
    fresh: bool = False  # of the second held-out batch (``FRESH``)


HOTFIX = ("memory/2026-11-10.md::5", "memory/2026-11-10.md::6")  # skip CI for urgent hotfixes
FLAG = ("memory/2026-11-02.md::1", "memory/2026-11-02.md::5")  # a new endpoint needs no flag
THUMB = ("memory/2026-11-21.md::0", "memory/2026-11-21.md::2")  # resize in the API pods
RESTART = ("memory/2026-11-21.md::1", "memory/2026-11-21.md::2")  # restart every worker first
PEAK = ("memory/2026-11-23.md::1",)  # pool 80, Brightline on the primary, silence, VACUUM FULL
PEAK_RETAIN = PEAK + ("memory/2026-11-23.md::3",)  # ... and the Retain repeating pool and reports
RAMP = ("memory/2026-11-23.md::2", "memory/2026-11-23.md::3")  # flag ramps during the freeze
DIRECT = ("memory/2026-11-10.md::6",)  # "deploy directly with make deploy-direct"

HOTFIX_Q = "can we skip CI for an urgent hotfix"
FLAG_Q = "does a new endpoint that nothing calls need a feature flag"
THUMB_Q = "thumbd falls behind, what do I do"
EXPORTS_Q = "ExportsStuck fired, what is the first thing to do"
POOL_Q = "cl_waiting is climbing during the peak, what should I change"
PRIMARY_Q = "can custom reports run on the primary database"
RAMP_Q = "can flags be ramped during the freeze"

PLAIN = [
    Case("plain", HOTFIX_Q, "Never skip CI for hotfixes", HOTFIX),
    Case(
        "plain",
        "thumbd is behind again, should the API just resize the images",
        "Don't resize images in the API pods",
        THUMB,
    ),
    Case("plain", EXPORTS_Q, "Do not restart all the worker pods when ExportsStuck fires", RESTART),
    Case(
        "plain",
        "should releases go out on an on-call handoff day",
        "Do not release on on-call handoff days",
        (),
    ),
    Case(
        "plain",
        "can I deploy a locally built image to production",
        "Never deploy a locally built image to production",
        (),
    ),
    Case("plain", POOL_Q, "Do not raise default_pool_size when cl_waiting climbs", PEAK_RETAIN),
    Case("plain", RAMP_Q, "Flags are not ramped during the freeze", RAMP),
    Case(
        "plain",
        "is it ok to silence the p99 latency alert for the freeze week",
        "Never silence LumenApiLatencyP99High for a whole week",
        PEAK,
    ),
    Case(
        "plain",
        "is a 10-minute canary bake enough",
        "A 10-minute canary bake is not enough for regular releases",
        (),
    ),
]

PARAPHRASE = [
    Case("paraphrase", HOTFIX_Q, "Urgent hotfixes must still go through CI", HOTFIX),
    Case("paraphrase", FLAG_Q, "New endpoints need a feature flag too", FLAG),
    Case(
        "paraphrase",
        "is the full CI pipeline too slow for urgent customer fixes",
        "The full CI pipeline is fast enough for urgent fixes",
        HOTFIX,
    ),
    Case(
        "paraphrase",
        "thumbd fell behind, should the API pods do the resizing",
        "Keep image resizing out of the API pods",
        THUMB,
    ),
    Case(
        "paraphrase",
        EXPORTS_Q,
        "Restarting all workers is a last resort for stuck exports",
        RESTART,
    ),
    Case(
        "paraphrase",
        "can Brightline run their custom report on the primary during the peak",
        "Custom reports belong on the replica, Brightline included",
        PEAK_RETAIN,
    ),
    Case(
        "paraphrase",
        POOL_Q,
        "A bigger pool only hides the slow query; leave default_pool_size at 40",
        PEAK_RETAIN,
    ),
    Case(
        "paraphrase",
        FLAG_Q,
        "New endpoints that the web app calls are behaviour changes and ship behind a feature flag",
        FLAG,
    ),
    Case("paraphrase", RAMP_Q, "The freeze covers flag ramps as well as deploys", RAMP),
    Case(
        "paraphrase",
        "should I extend a flag's remove-by date",
        "A flag's remove-by date is final",
        ("memory/2026-11-20.md::8",),
    ),
]

INSTEAD = [
    Case(
        "instead",
        THUMB_Q,
        "Never resize images in the API pods, even when thumbd falls behind; scale thumbd instead",
        THUMB,
    ),
    Case(
        "instead",
        EXPORTS_Q,
        "Check the exports queue and the S3 errors in the worker logs "
        "instead of restarting all the workers",
        RESTART,
    ),
    Case("instead", POOL_Q, "Find the slow query rather than raising the pool size", PEAK_RETAIN),
    Case(
        "instead",
        "in a lock queue should I cancel the long report or the migration",
        "In a lock queue, cancel the waiting DDL rather than the long-running report",
        (),
    ),
    Case(
        "instead",
        PRIMARY_Q,
        "Custom reports must not run on the primary; use the replica",
        PEAK_RETAIN,
    ),
    Case(
        "instead",
        "should I fix forward before rolling back",
        "Roll back first instead of fixing forward",
        (),
    ),
    Case(
        "instead",
        "thumbd is behind, can I just bump its replicas",
        "Scale thumbd rather than resizing in the API",
        THUMB,
    ),
    Case(
        "instead",
        "how do we silence a noisy alert during the freeze",
        "Tune the alert's threshold instead of silencing it for the week",
        PEAK,
    ),
    Case(
        "instead",
        "responses is bloated, should I run VACUUM FULL",
        "Use the autovacuum settings instead; VACUUM FULL locks responses for hours",
        PEAK,
    ),
    Case(
        "instead",
        "the hotfix CI run is slow, can I deploy directly",
        "Use the ci-hotfix lane instead of deploying directly",
        HOTFIX,
    ),
    Case(
        "instead",
        "in a lock queue should I cancel the long report or the migration",
        "In a lock queue, cancel the waiting DDL, not the long-running reader",
        (),
    ),
    Case(
        "instead",
        "should I fix forward before rolling back",
        "Do not fix forward under pressure; roll back first",
        (),
    ),
]

NO_LONGER = [
    Case(
        "no longer",
        PRIMARY_Q,
        "Custom reports no longer run on the primary, not even Brightline's",
        PEAK_RETAIN,
    ),
    Case(
        "no longer",
        "when does Sam ship lumen-web",
        "Sam no longer ships lumen-web on Tuesdays",
        (
            "memory/2026-11-03.md::5",
            "bank/world.md::1",
            "notes/team.md::4",
            "notes/team.md::7",
        ),
    ),
    Case(
        "no longer",
        "do quarantined tests still run at night",
        "Quarantined tests no longer run in nightly.yml",
        ("runbooks/ci.md::5", "memory/2026-11-03.md::3", "notes/glossary.md::4"),
    ),
    Case(
        "no longer",
        "is make deploy-direct still available for urgent fixes",
        "make deploy-direct no longer exists",
        DIRECT,
    ),
    Case(
        "no longer",
        EXPORTS_Q,
        "We no longer restart all worker pods for stuck exports",
        RESTART,
    ),
    Case(
        "no longer",
        "thumbd fell behind, should the API resize",
        "The API pods no longer resize images",
        THUMB,
    ),
    Case(
        "no longer",
        "is the canary bake still 10 minutes",
        "The canary bake is no longer 10 minutes",
        (),
    ),
    Case(
        "no longer",
        POOL_Q,
        "We no longer raise the PgBouncer pool size when cl_waiting climbs",
        PEAK_RETAIN,
    ),
]

DOUBLE = [
    Case("double negation", FLAG_Q, "Do not ship a new endpoint without a feature flag", FLAG),
    Case(
        "double negation",
        "does Lena hold the pager",
        "It is not true that Lena never holds the pager; she takes it during the freeze",
        ("runbooks/on-call.md::1", "notes/team.md::6"),
    ),
    Case("double negation", HOTFIX_Q, "Never deploy without a green CI run", HOTFIX),
    Case(
        "double negation",
        EXPORTS_Q,
        "Never restart the workers unless the logs show they are hung",
        RESTART,
    ),
    Case(
        "double negation",
        "should I post in #lumen-deploys after a rollback",
        "Don't forget to post the rollback in #lumen-deploys",
        (),
    ),
    Case(
        "double negation",
        RAMP_Q,
        "Nobody ramps a flag during the freeze, not even to 100%",
        RAMP,
    ),
    Case(
        "double negation",
        "is it fine to deploy on Friday afternoon",
        "It's not wrong to deploy on a Friday afternoon if the on-call person agrees",
        (
            "runbooks/deploy.md::2",
            "MEMORY.md::6",
            "bank/opinions.md::2",
            "memory/2026-11-06.md::0",
        ),
    ),
    Case(
        "double negation",
        "thumbd is slow, can the API resize images meanwhile",
        "It is not true that the API pods can't do without thumbd; they must never resize images",
        THUMB,
    ),
]

ENDORSE = [
    Case(
        "endorse and withdraw",
        THUMB_Q,
        "Follow the thumbnails runbook and scale thumbd; "
        "forget Marco's idea of resizing in the API pods",
        THUMB,
    ),
    Case(
        "endorse and withdraw",
        EXPORTS_Q,
        "The exports note is right: check the queue and the S3 errors first. "
        "Noor's restart-everything advice is wrong.",
        RESTART,
    ),
    Case(
        "endorse and withdraw",
        POOL_Q,
        "The Postgres notes are right that cl_waiting should be 0, "
        "but raising the pool to 80 is wrong",
        PEAK_RETAIN,
    ),
    Case(
        "endorse and withdraw",
        FLAG_Q,
        "Priya was right and Marco was wrong: new endpoints the web app calls need a flag",
        FLAG,
    ),
    Case(
        "endorse and withdraw",
        HOTFIX_Q,
        "The ci.md runbook is correct; "
        "the 2026-11-10 note that said hotfixes may skip CI is withdrawn",
        HOTFIX,
    ),
    Case(
        "endorse and withdraw",
        "in a lock queue should I cancel the long report or the migration",
        "Cancel the migration as the runbook says, not the customer's report",
        (),
    ),
    Case(
        "endorse and withdraw",
        "can Brightline run their custom report on the primary during the peak",
        "Keep Brightline on the replica like every other custom report; "
        "the 2026-11-23 exception is cancelled",
        PEAK_RETAIN,
    ),
    Case(
        "endorse and withdraw",
        RAMP_Q,
        "The glossary has it right, no flag ramps in a freeze; "
        "Marco's 'a ramp is not a deploy' does not hold",
        RAMP,
    ),
]

ELSEWHERE = [
    Case(
        "elsewhere",
        "how do I roll back a bad deploy",
        "Never run alembic downgrade in production",
        (),
    ),
    Case("elsewhere", "how long is the canary bake", "Do not page Lena for SEV2 incidents", ()),
    Case(
        "elsewhere",
        "who reviews migrations on responses",
        "Never run VACUUM FULL on responses during the peak",
        PEAK,
    ),
    Case(
        "elsewhere",
        "how do I create a feature flag",
        "Thumbnails must never be generated in the API pods",
        THUMB,
    ),
    Case(
        "elsewhere",
        "what does the smoke suite check",
        "Do not retry a smoke failure more than once",
        (),
    ),
    Case(
        "elsewhere",
        "when is the next change freeze",
        "Don't announce flag changes twice in #lumen-deploys",
        (),
    ),
    Case(
        "elsewhere",
        "who owns alerting",
        "Silences longer than 24 hours need a Linear ticket",
        (),
    ),
    Case("elsewhere", "what is the hotfix lane", "Never re-push an existing tag", ()),
]

FILLER = [
    Case(
        "filler",
        THUMB_Q,
        "Honestly, please never ever resize images in the API pods, "
        "not even when thumbd falls behind",
        THUMB,
    ),
    Case(
        "filler",
        HOTFIX_Q,
        "Seriously, we basically never skip CI, not even for super urgent hotfixes",
        HOTFIX,
    ),
    Case(
        "filler",
        POOL_Q,
        "Whatever happens, definitely don't bump default_pool_size to 80 "
        "just because cl_waiting climbs",
        PEAK_RETAIN,
    ),
    Case(
        "filler",
        EXPORTS_Q,
        "Um, actually, restarting all the worker pods is really not "
        "the first move for ExportsStuck",
        RESTART,
    ),
    Case(
        "filler",
        PRIMARY_Q,
        "FYI custom reports absolutely must not run on the primary anymore, Brightline included",
        PEAK_RETAIN,
    ),
    Case(
        "filler",
        "should releases go out on an on-call handoff day",
        "Obviously we still don't release on handoff days, full stop",
        (),
    ),
    Case(
        "filler",
        RAMP_Q,
        "Just to be super clear: no flag ramps whatsoever during the freeze, period",
        RAMP,
    ),
]

# Written after the first held-out part had been looked at and before the rule was
# revised again; never looked at while revising it.
FRESH = [
    Case(
        "plain",
        "thumbd fell behind, should the API resize the images",
        "The API pods must not resize images when thumbd is slow",
        THUMB,
    ),
    Case(
        "plain",
        "ExportsStuck again, restart everything?",
        "Never restart every worker pod for ExportsStuck",
        RESTART,
    ),
    Case(
        "plain",
        "what should I do about bloat on responses",
        "Do not run VACUUM FULL on responses",
        PEAK,
    ),
    Case(
        "plain",
        "should I quarantine a flaky test myself",
        "Do not quarantine a flaky test without Priya's or Marco's approval",
        (),
    ),
    Case(
        "instead",
        "LumenApiLatencyP99High keeps paging during the peak",
        "Raise the alert's duration instead of silencing LumenApiLatencyP99High",
        PEAK,
    ),
    Case(
        "instead",
        "can Brightline's reports use the primary during the peak",
        "Point Brightline's reports at the replica rather than the primary",
        PEAK_RETAIN,
    ),
    Case(
        "instead",
        "the thumbnails queue is at 5,000, what now",
        "Add thumbd replicas instead of resizing images in the API",
        THUMB,
    ),
    Case(
        "no longer",
        "do we still allow flag ramps in the freeze",
        "Flag ramps are no longer allowed during the freeze",
        RAMP,
    ),
    Case(
        "no longer",
        "is the PgBouncer pool size 40",
        "default_pool_size is no longer 40",
        ("bank/world.md::2", "notes/postgres-tuning.md::4", "MEMORY.md::9"),
    ),
    Case(
        "no longer",
        "does Noor still own the alert rules",
        "Noor no longer owns the alerting rules",
        ("notes/alerting.md::0", "memory/2026-11-17.md::7", "notes/team.md::5"),
    ),
    Case(
        "double negation",
        "can a hotfix skip review",
        "No hotfix ships without a second engineer's review",
        (),
    ),
    Case(
        "double negation",
        "do we need a flag for the new endpoint",
        "It is wrong to say new endpoints need no feature flag",
        FLAG,
    ),
    Case(
        "double negation",
        "can on-call skip the test page at handoff",
        "Never start a shift without a test page",
        (),
    ),
    Case(
        "endorse and withdraw",
        THUMB_Q,
        "The thumbnails runbook is right; Marco's resize-in-the-API idea is wrong",
        THUMB,
    ),
    Case(
        "endorse and withdraw",
        "cl_waiting climbs during the peak",
        "Noor's postgres-tuning notes are right: look for lock waits and long queries; "
        "the pool-size bump in the 2026-11-23 note is wrong",
        PEAK_RETAIN,
    ),
    Case(
        "endorse and withdraw",
        "who reviews migrations on responses",
        "Priya reviews them, not Marco",
        (),
    ),
    Case(
        "elsewhere",
        "how do I roll back the worker",
        "Never delete helm release secrets by hand",
        (),
    ),
    Case("elsewhere", "what is the bake time", "Don't ramp flags on Fridays", ()),
    Case(
        "elsewhere",
        "who is on call next week",
        "Restarting all worker pods is never the first move",
        RESTART,
    ),
    Case(
        "filler",
        RAMP_Q,
        "Honestly, flags really should not be ramped during the freeze at all",
        RAMP,
    ),
    Case(
        "filler",
        EXPORTS_Q,
        "Please, please don't just restart every worker pod when ExportsStuck fires, seriously",
        RESTART,
    ),
    Case("paraphrase", THUMB_Q, "Resizing is thumbd's job, not the API's", THUMB),
    Case(
        "paraphrase",
        "should we skip CI to ship the export fix faster",
        "Speed is no reason to skip CI",
        HOTFIX,
    ),
]
FRESH = [c._replace(fresh=True) for c in FRESH]

CASES: list[Case] = [
    *PLAIN,
    *PARAPHRASE,
    *INSTEAD,
    *NO_LONGER,
    *DOUBLE,
    *ENDORSE,
    *ELSEWHERE,
    *FILLER,
    *FRESH,
]


def part(cases: list[Case]) -> list[str]:
    """Each case's part: ``tune``; ``held`` (every third case of its category, not looked
    at while the rule was first tuned); ``fresh`` (the second held-out batch)."""
    seen: dict[str, int] = {}
    out = []
    for c in cases:
        if c.fresh:
            out.append("fresh")
            continue
        i = seen.get(c.category, 0)
        seen[c.category] = i + 1
        out.append("held" if i % 3 == 2 else "tune")
    return out
