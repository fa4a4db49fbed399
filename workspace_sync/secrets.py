"""Secrets in text about to be recorded: found, and replaced by a marker that says what
they were (``[REDACTED:github-token]``). Pure: text in, redacted text and findings out.

What is found: AWS access key ids (and secret keys next to an AWS name), GitHub, GitLab,
Slack, Stripe, npm, Google, OpenAI and Anthropic tokens, Slack webhooks, JWTs, bearer and
basic credentials, ``password=`` / ``token:`` / ``api_key=`` style assignments with a
value, passwords in URLs (``scheme://user:pass@host``), private key blocks, extra
patterns of the user, and high-entropy strings. The last are runs of 20 or more
base64 characters that mix upper case, lower case and digits, carry at least
``entropy_min`` bits per character and are not mostly made of words (so CamelCase names
such as ``LumenApiLatencyP99High`` stay), or runs of 32 or more hex digits with
two thirds of that entropy. Hex of exactly 40 or 64 digits is left alone: in notes it is
a commit id or a SHA-256 digest, not a credential (a hex token next to ``token=`` is
still found by the assignment rule).

Names (a path, a node id, a chat or request id) are scanned with ``redact_name``: the
formats and the extra patterns only, since names are often random (a uuid, the hex id
of an exported page) and ``notes/secret.md::12`` is no assignment; each secret becomes
a keyed marker (``[REDACTED:slack-token:1f2e3d4c]``, 8 hex digits of a BLAKE2b digest
of the secret), so names that held different secrets stay apart and one name redacts
the same way every time (a retried request id still names the request).

NOTE: redaction never adds or removes a line. A private key block becomes one marker per
line (indentation kept), every other secret is replaced within its line, so line
numbers, and the line ranges of chunks and facts cut from the redacted text, still cite
the file on disk.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import msgspec

from workspace_sync.scan import FileText

MARKER = "[REDACTED:{kind}]"
"""What replaces a secret; ``kind`` names the rule that found it."""
KEYED_MARKER = "[REDACTED:{kind}:{digest}]"
"""What replaces a secret in a name: ``digest`` tells different secrets apart."""
_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+(?::[0-9a-f]{8})?\]")
_KIND = re.compile(r"[a-z0-9][a-z0-9-]*")
_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_END = re.compile(r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_BODY = re.compile(r"^\s*(?:[A-Za-z0-9+/=]+|(?:Proc-Type|DEK-Info|Comment):.*)\s*$")
_INDENT = re.compile(r"^\s*")

ENTROPY_MIN = 3.7
ENTROPY_MIN_CHARS = 20
HEX_MIN_CHARS = 32
HEX_IDS = frozenset({40, 64})
"""Hex lengths of commit ids and digests, which the entropy rule leaves alone."""


class Finding(msgspec.Struct, frozen=True):
    """A secret that was redacted: what it was and its 1-based line (a private key's
    block spans ``line..end_line``). Never the secret itself."""

    kind: str
    line: int
    end_line: int

    def where(self, path: str) -> str:
        """``path:12`` or ``path:12-38``."""
        span = f"{self.line}-{self.end_line}" if self.end_line > self.line else f"{self.line}"
        return f"{path}:{span}"


class Redacted(msgspec.Struct, frozen=True):
    """A text with its secrets replaced, and what was found, in text order."""

    text: str
    findings: tuple[Finding, ...] = ()


_WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_")
_TOKEN_CHARS = _WORD_CHARS | {"-"}
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_NAME_SEPARATORS = frozenset("-_")


class _Rule(NamedTuple):
    """A format: its regex, the group that is the secret, an optional test of the
    secret, the characters that may not come just before the match, and whether the
    regex is lower case and runs on the lower-cased text (case-insensitive, and
    faster than ``(?i)``)."""

    kind: str
    regex: re.Pattern[str]
    group: int | str = 0
    check: Callable[[str], bool] | None = None
    lead: frozenset[str] = frozenset()
    lower: bool = False


_PLACEHOLDER_WORDS = frozenset(
    "none null nil true false undefined empty redacted required optional changeme "
    "example pass password passwd secret token xxx".split()
)
_PLACEHOLDER_START = ("$", "<", "{", "%", "*", "[", "(", ".", "!", "env.", "os.", "process.env")


def _real_value(value: str) -> bool:
    """Whether an assigned value looks like a credential rather than a placeholder,
    a reference (``$TOKEN``, ``${{ secrets.X }}``, ``<your key>``) or a number."""
    v = value.strip()
    low = v.lower()
    if len(v) < 4 or low in _PLACEHOLDER_WORDS or low.startswith(_PLACEHOLDER_START):
        return False
    if len(set(low)) == 1 or v.isdigit():
        return False
    return any(c.isalnum() for c in v)


def _not_placeholder(value: str) -> bool:
    """A password in a URL counts unless it is a reference or a placeholder word."""
    low = value.lower()
    return low not in _PLACEHOLDER_WORDS and not low.startswith(_PLACEHOLDER_START)


def _not_words(value: str) -> bool:
    """A value after ``:`` (prose, YAML) counts only when it holds a digit or a symbol
    other than ``-_./``: ``token: rotated monthly`` and ``secret: lumen-db-creds`` are
    prose or names, ``password: hunter2`` is not."""
    odd = any(c.isdigit() or not (c.isalnum() or c in "-_./ ") for c in value)
    return odd and _real_value(value)


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


_E = r"(?![A-Za-z0-9_])"  # no word character after
_KEYWORDS = re.compile(
    r"pass(?:words?|wd|phrase)|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|credentials?"
)
"""Names that announce a secret, matched in the lower-cased text (``DB_PASSWORD``)."""
_ASSIGNED = re.compile(
    r"""(?:[_.-][A-Za-z0-9]+){0,3}["'*_]*[ \t]*(?P<sep>:=|=>|=|:)[ \t]*[*_]*[ \t]*"""
    r"""(?:(?P<q>["'`])(?P<qv>[^"'`\r\n]{4,200}?)(?P=q)|(?P<v>[^\s"'`,;<>(){}\[\]]{4,200}))"""
)
"""What follows such a name: the rest of an identifier (``SECRET_KEY``,
``token_v2``, ``secret.key``), a separator and a value, quoted or not."""
_WORD_KINDS = {
    "pass": "password",
    "secret": "secret",
    "token": "token",
    "apikey": "api-key",
    "privatekey": "private-key",
    "accesskey": "access-key",
    "credential": "credentials",
}

RULES: tuple[_Rule, ...] = (
    _Rule(
        "aws-access-key-id",
        re.compile(
            rf"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{{16}}{_E}"
        ),
        lead=_WORD_CHARS,
    ),
    _Rule(
        "aws-secret-key",
        re.compile(
            r"aws[a-z0-9_. -]{0,24}?(?:secret|private)[a-z0-9_. -]{0,24}?[\"'`]?"
            r"[ \t]*(?:=>|:=|=|:)[ \t]*[\"'`]?([a-z0-9/+=]{40})(?![a-z0-9/+=])"
        ),
        1,
        lower=True,
    ),
    _Rule(
        "github-token",
        re.compile(rf"(?:gh[pousr]_[A-Za-z0-9]{{36,255}}|github_pat_\w{{22,255}}){_E}"),
        lead=_WORD_CHARS,
    ),
    _Rule("gitlab-token", re.compile(r"glpat-[A-Za-z0-9_-]{20,}"), lead=_WORD_CHARS),
    _Rule("slack-token", re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}"), lead=_WORD_CHARS),
    _Rule(
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/([A-Za-z0-9/_-]{20,})"),
        1,
    ),
    # two rules, each with a literal start (an alternation at the start scans slowly)
    _Rule("stripe-key", re.compile(rf"sk_(?:live|test)_[A-Za-z0-9]{{16,}}{_E}"), lead=_WORD_CHARS),
    _Rule("stripe-key", re.compile(rf"rk_(?:live|test)_[A-Za-z0-9]{{16,}}{_E}"), lead=_WORD_CHARS),
    _Rule("npm-token", re.compile(rf"npm_[A-Za-z0-9]{{36}}{_E}"), lead=_WORD_CHARS),
    _Rule(
        "google-api-key",
        re.compile(r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
        lead=_TOKEN_CHARS,
    ),
    _Rule("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}"), lead=_TOKEN_CHARS),
    _Rule(
        "openai-key",
        re.compile(r"sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}"),
        lead=_TOKEN_CHARS,
    ),
    _Rule(
        "jwt",
        re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        lead=_TOKEN_CHARS,
    ),
    _Rule("url-password", re.compile(r"://[^\s:/@]*:([^\s/@]+)@"), 1, _not_placeholder),
    _Rule(
        "bearer-token",
        re.compile(r"bearer[ \t]+([a-z0-9._~+/-]{16,}=*)"),
        1,
        _has_digit,
        _WORD_CHARS,
        lower=True,
    ),
    _Rule(
        "basic-auth",
        re.compile(r"authorization[\"']?[ \t]*:[ \t]*[\"']?basic[ \t]+([a-z0-9+/]{8,}={0,2})"),
        1,
        lead=_WORD_CHARS,
        lower=True,
    ),
)
"""The built-in formats, most specific first (an earlier rule's match wins an overlap)."""
_NAME_LEADS = tuple(rule.lead - _NAME_SEPARATORS for rule in RULES)
"""The characters that may not come just before each format in a name."""

_B64_RUN = r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{%d,}+={0,2}+(?![A-Za-z0-9+/=_-])"
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_LETTER_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_VOWELS = frozenset("aeiouyAEIOUY")


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


def wordy(text: str) -> float:
    """The share of ``text`` in runs of three or more letters that hold a vowel (the
    words of ``LumenApiLatency`` or ``src/App/Header``); random strings score low."""
    words = (m for m in _LETTER_RUN.findall(text) if len(m) >= 3 and _VOWELS.intersection(m))
    return sum(len(m) for m in words) / len(text) if text else 0.0


def looks_random(s: str, bits: float) -> bool:
    """Whether a base64 run is a high-entropy secret: upper case, lower case and digits,
    at least ``bits`` of entropy per character, and mostly not words."""
    mixed = (
        any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)
    )
    return mixed and entropy(s) >= bits and wordy(s) < 0.5


def parse_patterns(spec: str) -> tuple[tuple[str, str], ...]:
    """Extra patterns from a setting: whitespace-separated regexes, each optionally named
    ``kind=regex`` (kind "custom" otherwise). A regex with a group redacts its first
    group, else the whole match; write a space as ``\\s`` or ``\\x20``.

    Raises:
        ValueError: a regex that does not compile or that matches the empty string.
    """
    out = []
    for entry in spec.split():
        kind, sep, regex = entry.partition("=")
        if not sep or not _KIND.fullmatch(kind):
            kind, regex = "custom", entry
        try:
            rx = re.compile(regex)
        except (re.error, OverflowError, RecursionError) as exc:
            raise ValueError(f"pattern {regex!r} is not a regular expression ({exc})") from None
        if rx.search("") is not None:
            raise ValueError(f"pattern {regex!r} matches the empty string")
        out.append((kind, regex))
    return tuple(out)


def parse_allow(spec: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The allow-list of a setting: whitespace-separated entries, each a literal secret
    or ``re:REGEX`` (matched against the whole secret). Returns (literals, regexes).

    Raises:
        ValueError: a regex that does not compile.
    """
    literals, regexes = [], []
    for entry in spec.split():
        if entry.startswith("re:"):
            try:
                re.compile(entry[3:])
            except (re.error, OverflowError, RecursionError) as exc:
                raise ValueError(f"allow {entry!r} is not a regular expression ({exc})") from None
            regexes.append(entry[3:])
        else:
            literals.append(entry)
    return tuple(literals), tuple(regexes)


class Scanner:
    """Finds and redacts secrets with the built-in rules, extra ``patterns`` and an
    ``allow`` list (see ``parse_patterns`` / ``parse_allow`` for their syntax).

    Example:
        >>> Scanner().redact("deploy with ghp_" + "a1B2" * 9).text
        'deploy with [REDACTED:github-token]'

    Raises:
        ValueError: a bad extra pattern or allow-list regex.
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        entropy_min: float = ENTROPY_MIN,
        entropy_min_chars: int = ENTROPY_MIN_CHARS,
        patterns: str = "",
        allow: str = "",
    ) -> None:
        self.enabled = enabled
        self.entropy_min = entropy_min
        self.extra = tuple(
            _Rule(kind, rx, 1 if rx.groups else 0)
            for kind, rx in ((k, re.compile(r)) for k, r in parse_patterns(patterns))
        )
        literals, regexes = parse_allow(allow)
        self.allow_literals = frozenset(literals)
        self.allow_regexes = tuple(re.compile(r) for r in regexes)
        self.min_chars = max(1, entropy_min_chars)
        self.runs = re.compile(_B64_RUN % min(self.min_chars, HEX_MIN_CHARS))

    def allowed(self, secret: str) -> bool:
        """Whether ``secret`` is on the allow-list."""
        return secret in self.allow_literals or any(r.fullmatch(secret) for r in self.allow_regexes)

    def redact(self, text: str) -> Redacted:
        """``text`` with every secret replaced by its marker, line breaks untouched."""
        return self._redact(text, names=False)

    def redact_name(self, name: str) -> Redacted:
        """``name`` (a path, a node id, a chat or request id) with every secret of a known
        format or of the extra patterns replaced by its keyed marker (see the module
        docstring); the assignment and entropy rules are not used on names.

        Example:
            >>> Scanner().redact_name("chat-xoxb-1234567890-abcdefghij").text
            'chat-[REDACTED:slack-token:29506a37]'
        """
        return self._redact(name, names=True)

    def _redact(self, text: str, *, names: bool) -> Redacted:
        if not self.enabled or not text:
            return Redacted(text)
        parts = _LINE_BREAK.split(text)
        lines = parts[0::2]
        keys = _private_keys(lines) if "PRIVATE KEY" in text and not names else []
        parts[0::2] = lines
        text = "".join(parts)
        starts = [0]
        for i in range(0, len(parts) - 1, 2):
            starts.append(starts[-1] + len(parts[i]) + len(parts[i + 1]))
        hits = self._hits(text, starts, names=names)
        out, at = [], 0
        for s, e, kind in hits:
            out.append(
                text[at:s] + (_keyed(kind, text[s:e]) if names else MARKER.format(kind=kind))
            )
            at = e
        out.append(text[at:])
        found = [(starts[b], Finding("private-key", b + 1, e + 1)) for b, e in keys]
        for s, _, kind in hits:
            line = bisect.bisect_right(starts, s)
            found.append((s, Finding(kind, line, line)))
        found.sort(key=lambda item: item[0])
        return Redacted("".join(out), tuple(f for _, f in found))

    def _hits(
        self, text: str, starts: Sequence[int] | None, *, names: bool = False
    ) -> list[tuple[int, int, str]]:
        """Spans to redact (start, end, kind), sorted and disjoint. The first rule to
        claim a span keeps it, even when the allow-list spares it; markers already in
        the text are claimed from the start, so redacting twice changes nothing. In
        ``names`` only the formats and the extra patterns run."""
        taken = [m.span() for m in _MARKER.finditer(text)]
        hits: list[tuple[int, int, str]] = []
        low = text.lower()
        if len(low) != len(text):  # a few letters lower-case to two characters
            low = text.translate(_ASCII_LOWER)
        found = itertools.chain(self._extra(text, starts), _formats(text, low, names))
        if not names:
            found = itertools.chain(found, _assignments(text, low), self._entropic(text))
        for s, e, kind in found:
            if s < e and not any(s < te and ts < e for ts, te in taken):
                taken.append((s, e))
                if not self.allowed(text[s:e]):
                    hits.append((s, e, kind))
        return sorted(hits)

    def holds(self, text: str, *, names: bool = False) -> bool:
        """Whether ``text`` holds a secret that ``redact`` (``names``: ``redact_name``)
        would replace; cheaper than either when it holds none."""
        if not self.enabled or not text:
            return False
        if not names and "PRIVATE KEY" in text and _BEGIN.search(text):
            return True
        return bool(self._hits(text, None, names=names))

    def _extra(self, text: str, starts: Sequence[int] | None) -> Iterator[tuple[int, int, str]]:
        """The user's patterns, line by line (so that ``\\s`` never joins two lines)."""
        if self.extra and starts is None:
            starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
        for rule in self.extra:
            assert starts is not None
            for i, at in enumerate(starts):
                end = starts[i + 1] if i + 1 < len(starts) else len(text)
                for m in rule.regex.finditer(text[at:end].rstrip("\r\n")):
                    s, e = m.span(rule.group)
                    yield at + s, at + e, rule.kind

    def _entropic(self, text: str) -> Iterator[tuple[int, int, str]]:
        """High-entropy runs: one pass over the base64 runs, of which hex runs are the
        ones made of hex digits only."""
        for m in self.runs.finditer(text):
            run = m.group()
            if _HEX.fullmatch(run):
                keep = len(run) >= HEX_MIN_CHARS and len(run) not in HEX_IDS
                keep = keep and entropy(run) >= self.entropy_min * 2 / 3
            else:
                keep = len(run) >= self.min_chars and looks_random(run, self.entropy_min)
            if keep:
                yield m.start(), m.end(), "high-entropy"


def _keyed(kind: str, secret: str) -> str:
    digest = hashlib.blake2b(secret.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return KEYED_MARKER.format(kind=kind, digest=digest)


def _formats(text: str, low: str, names: bool = False) -> Iterator[tuple[int, int, str]]:
    """Matches of the built-in formats; in ``names`` a ``-`` or ``_`` may come just
    before one, as it separates the words of a file name (``deploy-sk-...md``)."""
    for rule, name_lead in zip(RULES, _NAME_LEADS, strict=True):
        src = low if rule.lower else text
        lead = name_lead if names else rule.lead
        for m in rule.regex.finditer(src):
            s, e = m.span(rule.group)
            if m.start() and src[m.start() - 1] in lead:
                continue
            if rule.check is None or rule.check(text[s:e]):
                yield s, e, rule.kind


def _assignments(text: str, low: str) -> Iterator[tuple[int, int, str]]:
    for k in _KEYWORDS.finditer(low):
        m = _ASSIGNED.match(text, k.end())
        if m is None:
            continue
        group = "qv" if m.group("qv") is not None else "v"
        check = _not_words if m.group("sep") == ":" else _real_value
        if check(m.group(group)):
            word = re.sub(r"[_-]|words?|wd|phrase|s$", "", k.group())
            s, e = m.span(group)
            yield s, e, _WORD_KINDS.get(word, "secret")


def _private_keys(lines: list[str]) -> list[tuple[int, int]]:
    """Replace private key blocks in ``lines`` (in place) by one marker per line and
    return their 0-based (first, last) lines. A block without an END line ends at its
    last line of base64 or headers."""
    blocks = []
    marker = MARKER.format(kind="private-key")
    i = 0
    while i < len(lines):
        begin = _BEGIN.search(lines[i])
        if begin is None:
            i += 1
            continue
        end = _END.search(lines[i], begin.end())
        if end is not None:
            lines[i] = lines[i][: begin.start()] + marker + lines[i][end.end() :]
            blocks.append((i, i))
            i += 1
            continue
        lines[i] = lines[i][: begin.start()] + marker
        j = i + 1
        while j < len(lines):
            end = _END.search(lines[j])
            indent = _INDENT.match(lines[j])
            pad = indent.group() if indent else ""
            if end is not None:
                lines[j] = pad + marker + lines[j][end.end() :]
                break
            if not lines[j].strip() or not _KEY_BODY.match(lines[j]):
                j -= 1
                break
            lines[j] = pad + marker
            j += 1
        j = min(j, len(lines) - 1)
        blocks.append((i, j))
        i = j + 1
    return blocks


def redact_files(
    files: Sequence[FileText], scanner: Scanner
) -> tuple[list[FileText], dict[str, tuple[Finding, ...]]]:
    """The files as they may be recorded (content hash still that of the bytes on disk,
    which are never changed), and the findings of each file that held secrets."""
    out: list[FileText] = []
    found: dict[str, tuple[Finding, ...]] = {}
    for f in files:
        r = scanner.redact(f.text)
        if r.findings:
            found[f.path] = r.findings
            f = FileText(f.path, r.text, f.content_hash)
        out.append(f)
    return out, found
