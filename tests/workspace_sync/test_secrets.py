"""Secret redaction: every format is found and replaced in place, lines stay where they
are, ordinary prose and the example workspace are left alone, the settings (extra
patterns, allow-list, off) work, and an incremental sync of redacted files equals a
sync from scratch."""

from __future__ import annotations

import base64
import json
import string
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ocb_events.codec import encode_record
from ocb_events.schema import Event, Record
from projections import graph
from tests.workspace_sync.support import apply, ft, previous, view
from workspace_sync import diff_workspace, scan_workspace, split_lines
from workspace_sync.secrets import (
    Finding,
    Scanner,
    entropy,
    looks_random,
    parse_allow,
    parse_patterns,
    redact_files,
    wordy,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
SCAN = Scanner()

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def chars(alphabet: str, n: int, m: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=n, max_size=n if m is None else m)


def with_digit(s: str) -> str:
    return s[:-1] + "7"


# ----------------------------------------------------------------- the formats


def jwt(sub: str, sig: str) -> str:
    def part(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': sub})}.{sig}"


def pem(body: list[str], kind: str) -> str:
    return "\n".join([f"-----BEGIN {kind}-----", *body, f"-----END {kind}-----"])


# (strategy of (text to paste, the secret in it), kinds that may report it)
FORMATS: dict[str, tuple[st.SearchStrategy[tuple[str, str]], set[str]]] = {
    "aws-access-key-id": (
        st.builds(lambda p, s: p + s, st.sampled_from(["AKIA", "ASIA"]), chars(HEX.upper(), 16))
        .map(lambda k: (k, k)),
        {"aws-access-key-id"},
    ),
    "aws-secret-key": (
        st.tuples(st.sampled_from(["aws_secret_access_key = ", "AWS_SECRET_ACCESS_KEY="]),
                  chars(B64, 40)).map(lambda t: (t[0] + t[1], t[1])),
        {"aws-secret-key"},
    ),
    "github-token": (
        st.one_of(
            st.builds(lambda p, s: p + s, st.sampled_from(["ghp_", "gho_", "ghs_", "ghu_"]),
                      chars(ALNUM, 36)),
            st.builds(lambda a, b: f"github_pat_{a}_{b}", chars(ALNUM, 22), chars(ALNUM, 59)),
        ).map(lambda k: (k, k)),
        {"github-token"},
    ),
    "slack-token": (
        st.builds(lambda p, a, b, c: f"xox{p}-{a}-{b}-{c}", st.sampled_from("bpas"),
                  chars(string.digits, 12), chars(string.digits, 13), chars(ALNUM, 24))
        .map(lambda k: (k, k)),
        {"slack-token"},
    ),
    "stripe-key": (
        st.builds(lambda p, s: p + s, st.sampled_from(["sk_live_", "rk_live_", "sk_test_"]),
                  chars(ALNUM, 24, 99)).map(lambda k: (k, k)),
        {"stripe-key"},
    ),
    "google-api-key": (
        chars(URLSAFE, 35).map(lambda s: ("AIza" + s, "AIza" + s)), {"google-api-key"}
    ),
    "openai-key": (
        st.builds(lambda p, s: p + with_digit(s), st.sampled_from(["sk-", "sk-proj-"]),
                  chars(URLSAFE, 20, 80)).map(lambda k: (k, k)),
        {"openai-key", "anthropic-key"},
    ),
    "anthropic-key": (
        chars(URLSAFE, 40, 95).map(lambda s: ("sk-ant-api03-" + s, "sk-ant-api03-" + s)),
        {"anthropic-key"},
    ),
    "jwt": (
        st.builds(jwt, st.text(ALNUM, min_size=1, max_size=30), chars(URLSAFE, 43))
        .map(lambda k: (k, k)),
        {"jwt"},
    ),
    "assignment": (
        st.tuples(
            st.sampled_from(["password", "DB_PASSWORD", "api_key", "apiKey", "token",
                             "client_secret", "GITHUB_TOKEN", "passwd", '"password"']),
            st.sampled_from(["=", " = ", ": ", ":"]),
            st.sampled_from(["", '"', "'"]),
            st.builds(lambda a, b: a + with_digit(b), chars(string.ascii_letters, 1),
                      chars(ALNUM + "#@^&+!", 5, 30)),
        ).map(lambda t: (f"{t[0]}{t[1]}{t[2]}{t[3]}{t[2]}", t[3])),
        {"password", "api-key", "token", "secret"},
    ),
    "url-password": (
        st.tuples(st.sampled_from(["postgres", "https", "redis", "amqp"]),
                  chars(string.ascii_lowercase, 1, 12), chars(ALNUM, 8, 30))
        .map(lambda t: (f"{t[0]}://{t[1]}:{t[2]}@db.internal:5432/app", t[2])),
        {"url-password"},
    ),
    "bearer-token": (
        chars(URLSAFE + ".", 24, 60).map(with_digit)
        .map(lambda s: (f"Authorization: Bearer {s}", s)),
        {"bearer-token"},
    ),
    "high-entropy": (
        chars(B64, 24, 64).filter(lambda s: looks_random(s, 3.7)).map(lambda s: (s, s)),
        {"high-entropy"},
    ),
    "high-entropy-hex": (
        chars(HEX, 32, 39).filter(lambda s: entropy(s) >= 3.7 * 2 / 3).map(lambda s: (s, s)),
        {"high-entropy"},
    ),
}  # fmt: skip

EXAMPLES = {
    "aws-access-key-id": "AKIAZ7QX4M2PLK9RT3VB",
    "github-token": "ghp_" + "x9Kq2LmZ7vB4nR8tW1yC6pD3sF5gH0jA2eUo",
    "slack-token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe-key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "google-api-key": "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "openai-key": "sk-proj-Xk9pQ2mZr7LwT4vB8nYc3HsJ6dFgT1aB",
    "anthropic-key": "sk-ant-api03-Xk9pQ2mZr7LwT4vB8nYc3HsJ6dFgT1aBq",
    "jwt": jwt("1234567890", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    "high-entropy": "Xk9pQ2mZr7LwT4vB8nYc3HsJ6dFg",
    "gitlab-token": "glpat-Xk9pQ2mZr7LwT4vB8nYc",
    "npm-token": "npm_" + "Xk9pQ2mZr7LwT4vB8nYc3HsJ6dFgT1aBq2Wz",
}

WORDS = (
    "the deploy rolled back after we checked the canary and Priya paged the on-call "
    "engineer because latency rose to 900ms at 14:05 UTC on 2026-11-12 so Marco wrote "
    "a postmortem about token budgets password rotation and secret management in the "
    "vault with helm chart version 3.16.1 and migration 0087_add_responses_sentiment_score "
    "we keep LumenApiLatencyP99High and LumenApi5xxRateHigh alerts in runbooks/deploy.md#L12-L20 "
    "see https://github.com/lumenhq/lumen-app/pull/2296 and test_daily_digest_respects_timezone"
).split()
TRICKY = [
    "token: rotated monthly",
    "token-based: authentication",
    "the secretary: Jane",
    "max_tokens_per_minute: 4000",
    "password: see the vault",
    "secret: lumen-db-credentials",
    "max_tokens=4000",
    "lock_timeout = '5s'",
    "api_key=${API_KEY}",
    "password=<your password>",
    "postgres://user:${DB_PASSWORD}@db/app",
    "https://token.actions.githubusercontent.com",
    "Ubuntu2204ServerImage",
    "src/Components/Header2/index",
    "ix_responses_tenant_created",
]
commit_ids = chars(HEX, 40)
digests = chars(HEX, 64).map(lambda d: "sha256:" + d)
uuids = st.uuids().map(str)
prose_words = st.one_of(st.sampled_from(WORDS), st.sampled_from(TRICKY), commit_ids, digests, uuids)
prose_lines = st.lists(prose_words, max_size=12).map(" ".join)
prose = st.lists(
    st.one_of(
        prose_lines, prose_lines.map(lambda s: "## " + s), prose_lines.map(lambda s: "- " + s)
    ),
    min_size=1,
    max_size=8,
).map("\n".join)


def lines_of(text: str) -> list[str]:
    return split_lines(text)


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_each_known_format_is_found_and_replaced_by_its_marker(kind: str) -> None:
    secret = EXAMPLES[kind]
    r = SCAN.redact(f"# Notes\n\ndeploy with {secret} today\n")
    assert r.text == f"# Notes\n\ndeploy with [REDACTED:{kind}] today\n"
    assert r.findings == (Finding(kind, 3, 3),)


@pytest.mark.parametrize(
    ("line", "redacted", "kind"),
    [
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
         "aws_secret_access_key = [REDACTED:aws-secret-key]", "aws-secret-key"),
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=[REDACTED:password]", "password"),
        ("SECRET_KEY=hunter2hunter2", "SECRET_KEY=[REDACTED:secret]", "secret"),
        ("PASSWORD_PROD=hunter2", "PASSWORD_PROD=[REDACTED:password]", "password"),
        ("ADMIN_TOKEN_V2=abc123xyz", "ADMIN_TOKEN_V2=[REDACTED:token]", "token"),
        ('app.secret_key = "dev-key-123"', 'app.secret_key = "[REDACTED:secret]"', "secret"),
        ('"api_key": "12ab34cd56ef"', '"api_key": "[REDACTED:api-key]"', "api-key"),
        ("token: abc123xyz", "token: [REDACTED:token]", "token"),
        ("**Password:** Tr0ub4dor&3", "**Password:** [REDACTED:password]", "password"),
        ("postgres://admin:s3cretPass@db:5432/app",
         "postgres://admin:[REDACTED:url-password]@db:5432/app", "url-password"),
        ("Authorization: Bearer abcdef1234567890abcdef",
         "Authorization: Bearer [REDACTED:bearer-token]", "bearer-token"),
        ("authorization: Basic dXNlcjpwYXNzd29yZA==",
         "authorization: Basic [REDACTED:basic-auth]", "basic-auth"),
        ("hook https://hooks.slack.com/services/T0123ABCD/B0123ABCD/aBcDeFgHiJkLmNoPqRsTuVwX",
         "hook https://hooks.slack.com/services/[REDACTED:slack-webhook]", "slack-webhook"),
        ("token=3f786850e387550fdab836ed7e6dc881de23001b",
         "token=[REDACTED:token]", "token"),
        ("md5 5f4dcc3b5aa765d61d8327deb882cf99 leaked",
         "md5 [REDACTED:high-entropy] leaked", "high-entropy"),
    ],
)  # fmt: skip
def test_secrets_in_context_keep_their_context(line: str, redacted: str, kind: str) -> None:
    r = SCAN.redact(line)
    assert (r.text, r.findings) == (redacted, (Finding(kind, 1, 1),))


def test_a_private_key_block_keeps_its_line_count_and_indentation() -> None:
    body = ["MIIEowIBAAKCAQEA1234567890abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"] * 3
    text = "# Keys\n\n- deploy key:\n\n  " + pem(body, "RSA PRIVATE KEY").replace(
        "\n", "\n  "
    ) + "\n\nafter\n"  # fmt: skip
    r = SCAN.redact(text)
    assert r.findings == (Finding("private-key", 5, 9),)
    assert lines_of(r.text) == [
        "# Keys", "", "- deploy key:", "", *["  [REDACTED:private-key]"] * 5, "", "after",
    ]  # fmt: skip
    assert r.findings[0].where("keys.md") == "keys.md:5-9"


def test_a_private_key_without_its_end_line_is_redacted_to_its_last_base64_line() -> None:
    text = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACB\nthat is all"
    )
    r = SCAN.redact(text)
    assert r.text == "\n".join(["[REDACTED:private-key]"] * 3 + ["that is all"])
    assert r.findings == (Finding("private-key", 1, 3),)


def test_commit_ids_digests_and_words_that_look_random_are_not_secrets() -> None:
    text = (
        "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it; image "
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, "
        "alert LumenApiLatencyP99High, request 123e4567-e89b-12d3-a456-426614174000"
    )
    assert SCAN.redact(text).findings == ()
    assert wordy("LumenApiLatencyP99High") >= 0.5 > wordy("Xk9pQ2mZr7LwT4vB8nYc3HsJ6dFg")


@given(
    st.sampled_from(sorted(FORMATS)).flatmap(lambda k: st.tuples(st.just(k), FORMATS[k][0])),
    prose,
    st.data(),
)
def test_a_secret_pasted_into_prose_is_always_redacted(
    case: tuple[str, tuple[str, str]], text: str, data: st.DataObject
) -> None:
    fmt, (pasted, secret) = case
    lines = lines_of(text)
    at = data.draw(st.integers(0, len(lines)))
    before, after = data.draw(prose_lines), data.draw(prose_lines)
    plain = SCAN.redact(f"{before} PASTE {after}").text  # prose may hold the same string
    lines.insert(at, f"{before} {pasted} {after}")
    doc = "\n".join(lines) + "\n"
    r = SCAN.redact(doc)
    assert len(lines_of(r.text)) == len(lines)
    assert lines_of(r.text)[at].count(secret) == plain.count(secret)
    assert any(f.line == at + 1 and f.kind in FORMATS[fmt][1] for f in r.findings)
    for i, (old, new) in enumerate(zip(lines, lines_of(r.text), strict=True)):
        assert old == new or any(f.line == i + 1 for f in r.findings)
    again = SCAN.redact(r.text)
    assert (again.text, again.findings) == (r.text, ())


@given(st.lists(chars(B64, 60).map(lambda s: "MIIE" + s), min_size=1, max_size=6), prose, st.data())
def test_a_pasted_private_key_is_redacted_line_by_line(
    body: list[str], text: str, data: st.DataObject
) -> None:
    lines = lines_of(text)
    at = data.draw(st.integers(0, len(lines)))
    key = pem(body, data.draw(st.sampled_from(["PRIVATE KEY", "EC PRIVATE KEY"])))
    doc = "\n".join(lines[:at] + [key] + lines[at:])
    r = SCAN.redact(doc)
    assert all(b not in r.text for b in body)
    assert len(lines_of(r.text)) == len(lines_of(doc))
    assert Finding("private-key", at + 1, at + len(body) + 2) in r.findings


@given(prose)
def test_ordinary_prose_has_no_secret(text: str) -> None:
    assert SCAN.redact(text).findings == ()


def test_the_example_workspace_has_no_secret() -> None:
    files, _ = scan_workspace(EXAMPLE)
    found = {f.path: SCAN.redact(f.text).findings for f in files}
    assert len(found) > 20 and {p: f for p, f in found.items() if f} == {}


def test_the_allow_list_spares_literals_and_whole_matches_of_regexes() -> None:
    key, other = "AKIAIOSFODNN7EXAMPLE", "AKIAZ7QX4M2PLK9RT3VB"
    text = f"example {key} and sk_test_4eC39HqLyjWDarjtT1zdp7dc and {other}"
    allow = Scanner(allow=f"{key} re:sk_test_\\w+ re:AKIAZ")
    assert allow.redact(text).text == text.replace(other, "[REDACTED:aws-access-key-id]")
    assert Scanner(allow="re:AKIAZ.*").redact(other).findings == ()
    # an allowed key is not redacted by any other rule either
    assert allow.redact(f"aws_access_key_id={key}").findings == ()


def test_extra_patterns_redact_their_group_or_match_with_their_kind() -> None:
    sc = Scanner(patterns=r"acme-key=ACME-[0-9A-F]{12} (?i)pin:\s*(\d{4})")
    r = sc.redact("use ACME-0123456789AB\nPIN: 4711 and PIN:\n1234")
    assert r.text == "use [REDACTED:acme-key]\nPIN: [REDACTED:custom] and PIN:\n1234"
    assert r.findings == (Finding("acme-key", 1, 1), Finding("custom", 2, 2))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("acme=ACME-[", "not a regular expression"),
        ("a{1,99999999999}", "not a regular expression"),
        ("x*", "matches the empty string"),
    ],
)
def test_bad_extra_patterns_are_refused(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_patterns(spec)
    for bad in ("re:(", "re:a{1,99999999999}"):
        with pytest.raises(ValueError, match="not a regular expression"):
            parse_allow(bad)


def test_scanning_off_keeps_the_text_as_it_is() -> None:
    text = "DB_PASSWORD=hunter2 " + EXAMPLES["github-token"]
    assert Scanner(enabled=False).redact(text) == Scanner(enabled=False).redact(text)
    assert Scanner(enabled=False).redact(text).text == text
    assert Scanner(entropy_min_chars=40).redact(EXAMPLES["high-entropy"]).findings == ()


def test_redacted_files_keep_the_hash_of_the_file_on_disk() -> None:
    f = ft("a.md", "# A\n\nkey " + EXAMPLES["stripe-key"] + "\n")
    (g, h), found = redact_files([f, ft("b.md", "plain")], SCAN)
    assert g.content_hash == f.content_hash and g.text == "# A\n\nkey [REDACTED:stripe-key]\n"
    assert h.text == "plain"
    assert found == {"a.md": (Finding("stripe-key", 3, 3),)}


# ----------------------------------------------------------------- sync


SECRET_PARAS = [
    "alpha beta",
    "# Heading " + EXAMPLES["github-token"],
    "deploy with password=hunter2 now",
    "- item one\n- item " + EXAMPLES["openai-key"],
    pem(["MIIEowIBAAKCAQEA1234567890abcdef"] * 2, "PRIVATE KEY"),
    "zeta eta theta",
]
secret_workspaces = st.dictionaries(
    st.sampled_from(["a.md", "b.md", "dir/c.md"]),
    st.lists(st.sampled_from(SECRET_PARAS), max_size=6).map("\n\n".join),
    max_size=3,
)


def sync(g: graph.State, version: dict[str, str]) -> tuple[graph.State, list[Event]]:
    files, _ = redact_files([ft(p, t) for p, t in sorted(version.items())], SCAN)
    events = diff_workspace(files, previous(g), target_chars=20)
    return apply(g, events), events


@given(st.lists(secret_workspaces, min_size=1, max_size=5))
def test_incremental_sync_of_files_with_secrets_equals_a_sync_from_scratch(
    versions: list[dict[str, str]],
) -> None:
    g = graph.initial()
    recorded: list[Event] = []
    for version in versions:
        g, events = sync(g, version)
        recorded += events
    fresh, _ = sync(graph.initial(), versions[-1])
    assert view(g) == view(fresh)
    for path, start, end, _col, text in view(g):
        redacted = SCAN.redact(versions[-1][path]).text
        assert text == "\n".join(lines_of(redacted)[start - 1 : end])
    body = b"".join(encode_record(Record(seq=1, ts=0, actor="sync", event=e)) for e in recorded)  # type: ignore[arg-type]
    assert b"hunter2" not in body and EXAMPLES["github-token"].encode() not in body
    assert b"MIIEowIBAAKCAQEA" not in body
    _, again = sync(g, versions[-1])
    assert again == []


# ----------------------------------------------------------------- names


def test_a_name_gets_a_keyed_marker_that_tells_secrets_apart() -> None:
    """The same name redacts the same way every time (a retried request id), two
    secrets stay two names, and redacting again, as a name or as text, changes nothing."""
    other = "xoxb-" + "987654321098-AbCdEfGhIjKlMnOpQr"
    a, b = SCAN.redact_name(f"chat-{EXAMPLES['slack-token']}"), SCAN.redact_name(f"chat-{other}")
    assert a.text.startswith("chat-[REDACTED:slack-token:") and a.text.endswith("]")
    assert a.findings == (Finding("slack-token", 1, 1),)
    assert a.text != b.text and SCAN.redact_name(f"chat-{EXAMPLES['slack-token']}") == a
    assert SCAN.redact_name(a.text).text == a.text and SCAN.redact(a.text).text == a.text


@pytest.mark.parametrize("kind", sorted(set(EXAMPLES) - {"high-entropy"}))
def test_each_known_format_is_found_in_a_path(kind: str) -> None:
    secret = EXAMPLES[kind]
    for rel in (f"keys/{secret}/rotation.md", f"notes/rotation-{secret}.md::3"):
        r = SCAN.redact_name(rel)
        assert secret not in r.text and [f.kind for f in r.findings] == [kind], rel


@pytest.mark.parametrize(
    "name",
    [
        "notes/secret.md::1234",  # the text scanner reads ``secret.md::1234`` as an assignment
        "exports/Meeting Notes 3f2a9c1b8d7e4f6a9b0c1d2e3f4a5b6c.md",  # a hex id
        "req-6f1c2e9a4b3d4e8f9a0b1c2d3e4f5a6b",  # uuid4().hex
        "notes/task-list-2024-planning-notes.md::3",
        "chat-QmFzZTY0RW5jb2RlZFJhbmRvbUlkMTIz",  # a random-looking id
    ],
)
def test_a_name_is_not_scanned_with_the_entropy_or_assignment_rules(name: str) -> None:
    assert SCAN.redact_name(name).text == name
    assert not SCAN.holds(name, names=True)


@settings(max_examples=200)
@given(
    st.lists(
        st.one_of(
            prose_words,
            st.sampled_from(sorted(EXAMPLES.values())),
            st.sampled_from(["password=hunter2", "-----BEGIN PRIVATE KEY-----", "MIIEow/x+"]),
        ),
        max_size=10,
    ).map(" ".join),
    st.booleans(),
)
def test_holds_says_what_redacting_finds(text: str, names: bool) -> None:
    """``holds``, the net's cheap check, agrees with a full redaction."""
    r = SCAN.redact_name(text) if names else SCAN.redact(text)
    assert SCAN.holds(text, names=names) == bool(r.findings)
