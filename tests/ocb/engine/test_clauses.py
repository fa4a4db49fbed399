"""How a text is read into clauses for the stance of a correction: polarity (negation,
withdrawal, double negation, "instead", "no longer"), fillers, conditions, exceptions,
judging preambles and what a text only reports."""

from __future__ import annotations

import pytest

from ocb.engine.clauses import units

READINGS: list[tuple[str, list[tuple[set[str], bool]]]] = [
    ("Never skip CI for hotfixes", [({"skip", "ci", "hotfix"}, True)]),
    # a bare withdrawal takes back the clause before it, once
    (
        "A note said hotfixes may skip CI; that guidance is withdrawn and must not be followed.",
        [({"hotfix", "skip", "ci"}, True)],
    ),
    # what to do instead is advice, what it replaces is withdrawn
    (
        "Never resize images in the API pods, even when thumbd falls behind; scale thumbd instead",
        [({"resiz", "imag", "api", "pod"}, True), ({"scale", "thumbd"}, False)],
    ),
    (
        "Check the logs instead of restarting the workers",
        [({"check", "log"}, False), ({"restart", "worker"}, True)],
    ),
    (
        "Instead of restarting the workers, check the logs",
        [({"restart", "worker"}, True), ({"check", "log"}, False)],
    ),
    (
        "Scale thumbd rather than resizing in the API",
        [({"scale", "thumbd"}, False), ({"resiz", "api"}, True)],
    ),
    (
        "In a lock queue, cancel the waiting DDL, not the long-running reader",
        [({"lock", "queue", "cancel", "wait", "ddl"}, False), ({"long", "run", "reader"}, True)],
    ),
    # double negation
    ("It is not true that Lena never holds the pager", [({"lena", "hold", "pager"}, False)]),
    (
        "Do not ship a new endpoint without a feature flag",
        [({"ship", "new", "endpoint", "featur", "flag"}, False)],
    ),
    ("It's not wrong to deploy on a Friday", [({"deploy", "friday"}, False)]),
    # a negative subject of a relative clause is not the claim's negation
    (
        "New endpoints that nothing calls yet do not need a feature flag",
        [({"new", "endpoint", "call", "yet", "featur", "flag"}, True)],
    ),
    # "no longer ..., not even X" says its negation once
    (
        "Custom reports no longer run on the primary, not even Brightline's",
        [({"custom", "report", "run", "primari", "brightlin"}, True)],
    ),
    # fillers, intensifiers and modals carry no claim
    (
        "Honestly, please never ever resize images, seriously",
        [({"resiz", "imag"}, True)],
    ),
    # a judging preamble introduces the claim, it is not one
    (
        "Priya was right and Marco was wrong: new endpoints need a flag",
        [({"new", "endpoint", "flag"}, False)],
    ),
    (
        "The runbook is right; restarting every worker is wrong",
        [({"restart", "everi", "worker"}, True)],
    ),
]


@pytest.mark.parametrize(("text", "want"), READINGS, ids=[t for t, _ in READINGS])
def test_a_text_is_read_into_clauses_with_their_polarity(
    text: str, want: list[tuple[set[str], bool]]
) -> None:
    assert [(set(u.terms), u.negated) for u in units(text)] == want


def test_conditions_and_exceptions_are_kept_apart_from_the_claim() -> None:
    (u,) = units("If cl_waiting climbs during the peak, raise default_pool_size to 80")
    assert set(u.terms) == {"rais", "default", "pool", "size", "80"} and not u.negated
    assert set(u.condition) == {"cl", "wait", "climb", "peak"}
    (u,) = units("Never restart the workers unless the logs show they are hung")
    assert set(u.terms) == {"restart", "worker"} and u.negated
    assert set(u.excused) == {"log", "show", "hung"}


def test_what_a_text_only_reports_is_not_advice() -> None:
    skipped, skip = units("We skipped CI. Skip CI")
    assert "skip" not in skipped.advised and "skip" in skip.advised
    (past,) = units("a report had been running on the primary")
    assert past.terms and not past.advised  # a past auxiliary: what happened
    told = "- B @lumen-worker: shipped without CI\n- 17:35 @Marco tries to raise the pool size"
    assert all(not u.advised for u in units(told))  # a B fact, a timeline entry
    (changed,) = units("The canary bake changed from 10 to 30 minutes")
    assert "30minut" in changed.terms and "10" not in changed.terms  # the old value goes
    (alert,) = units("ExportsStuck fires")
    assert {"export", "stuck"} <= alert.terms
