"""Mistake recurrence: once corrected, a mistake stops recurring; the wrong edge falls
and the correct one rises, query after query.

A certificate question is answered from its guidance chunk, which leads to the old
way (copy certificates by hand; reflex, 0.7) and only weakly to the current way (the
ACME job; dormant, 0.15), so the first answer holds the wrong chunk and not the right
one. After every answer the agent corrects it: when the wrong chunk fired it scores
the path guidance -> wrong -1, and it scores guidance -> right +1 (``learn
--fired-ids``, human outcomes). Two agents run the same questions: one corrects by
outcomes only, the other also injects a CORRECTION after the first answer (with the
chat id, targeting the wrong chunk). Settings: no similarity edges (only the scenario's
edges), default seeds, so the correction and the guidance both seed.
"""

from __future__ import annotations

from sims.common import Result, connect, paragraphs, rebuild_equal, scratch_brain, weight

NAME = "mistake_recurrence"
CLAIM = "a corrected mistake stops recurring; wrong edge falls, right edge rises"
FILES = {
    "runbooks/certs.md": "# Certificate renewal\n\nRenewing the TLS certificate of the "
    "public gateway before it expires.\n",
    "memory/by-hand.md": "# Old way\n\nCopy the key and certificate to each host by hand "
    "with scp.\n",
    "memory/acme.md": "# Current way\n\nThe ACME job renews every certificate; trigger it "
    "with make certs.\n",
}
FILLER = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
GUIDE, WRONG, RIGHT = "runbooks/certs.md::0", "memory/by-hand.md::0", "memory/acme.md::0"
SETTINGS = {"indexing.similar_k": 0}
START = (0.7, 0.15)  # the wrong and the right edge before the first question
QUESTION = "renew the tls certificate of the gateway"
CORRECTION = "Do not copy certificates by hand: the ACME job renews them (make certs)."


def workspace() -> dict[str, str]:
    files = dict(FILES)
    for i, text in enumerate(paragraphs(FILLER, 6, seed=3)):
        files[f"notes/n{i:02d}.md"] = f"# Note {i}\n\n{text}\n"
    return files


def monotone(ws: list[float], sign: int) -> bool:
    return all(sign * (b - a) >= -1e-9 for a, b in zip(ws, ws[1:], strict=False))


def agent(inject: bool, queries: int) -> tuple[dict[str, list[float]], bool]:
    """Per query: wrong fired, right fired, wrong and right weights; the rebuild check."""
    with scratch_brain(workspace(), SETTINGS) as brain:
        connect(brain, [(GUIDE, WRONG, START[0]), (GUIDE, RIGHT, START[1])])
        keys = ("wrong fired", "right fired", "wrong edge", "right edge")
        s: dict[str, list[float]] = {k: [] for k in keys}
        for q in range(queries):
            answer = brain.query(QUESTION, top=5, chat_id="c1")
            s["wrong fired"].append(float(WRONG in answer.fired))
            s["right fired"].append(float(RIGHT in answer.fired))
            if inject and q == 0:
                brain.inject("CORRECTION", CORRECTION, chat_id="c1", targets=[WRONG])
            if WRONG in answer.fired:
                brain.learn(-1.0, fired_ids=[GUIDE, WRONG])
            brain.learn(1.0, fired_ids=[GUIDE, RIGHT])
            s["wrong edge"].append(weight(brain, GUIDE, WRONG))
            s["right edge"].append(weight(brain, GUIDE, RIGHT))
        return s, rebuild_equal(brain)


def verdict(s: dict[str, list[float]]) -> tuple[bool, int | None]:
    """Whether the mistake showed, then stopped for good while the edges moved
    monotonically; and the query from which it stopped."""
    fired = s["wrong fired"]
    stopped = next((i for i, f in enumerate(fired) if not f), None)
    ok = (
        fired[0] == 1.0
        and s["right fired"][0] == 0.0
        and stopped is not None
        and not any(fired[stopped:])
        and s["right fired"][-1] == 1.0
        and monotone([START[0], *s["wrong edge"]], -1)
        and monotone([START[1], *s["right edge"]], +1)
    )
    return ok, None if stopped is None else stopped + 1


def run(quick: bool = False) -> Result:
    queries = 12 if quick else 30
    plain, ok_plain = agent(False, queries)
    corrected, ok_corrected = agent(True, queries)
    (plain_ok, plain_stop), (corr_ok, corr_stop) = verdict(plain), verdict(corrected)
    return Result(
        name=NAME,
        claim=CLAIM,
        passed=plain_ok and corr_ok,
        metrics={
            "stopped_at_query_outcomes": plain_stop,
            "stopped_at_query_with_correction": corr_stop,
            "wrong_fired_outcomes": int(sum(plain["wrong fired"])),
            "wrong_fired_with_correction": int(sum(corrected["wrong fired"])),
            "final_wrong_edge": plain["wrong edge"][-1],
            "final_right_edge": plain["right edge"][-1],
            "final_wrong_edge_with_correction": corrected["wrong edge"][-1],
            "final_right_edge_with_correction": corrected["right edge"][-1],
            "queries": queries,
        },
        series={
            **{f"outcomes: {k}": v for k, v in plain.items()},
            **{f"correction: {k}": v for k, v in corrected.items()},
        },
        rebuild_equal=ok_plain and ok_corrected,
        quick=quick,
    )
