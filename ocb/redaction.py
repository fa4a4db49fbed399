"""Keeping secrets out of what a brain records: the scanner of the settings in force
(``secrets.*``) and the warnings that say where a secret was redacted (its place and
kind, never the secret)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ocb.settings import Secrets, resolve
from workspace_sync.secrets import Finding, Redacted, Scanner

Warn = Callable[[str], None]


def scanner_of(config: Mapping[str, object]) -> Scanner:
    """The scanner of the recorded settings (defaults where none was recorded)."""
    s = resolve(Secrets, config)
    return Scanner(
        enabled=s.enabled,
        entropy_min=s.entropy_min,
        entropy_min_chars=s.entropy_min_chars,
        patterns=s.patterns,
        allow=s.allow,
    )


def warn_file(warn: Warn, path: str, findings: Sequence[Finding], note: str) -> None:
    """One warning per finding, naming ``path:line`` and the kind."""
    for f in findings:
        warn(f"{f.where(path)}: {f.kind} redacted {note}")


def redact_input(warn: Warn, scanner: Scanner, what: str, text: str) -> str:
    """``text`` (a query, injected content, a kg value ...) as it may be recorded, with a
    warning per secret found in it."""
    r: Redacted = scanner.redact(text)
    for f in r.findings:
        warn(f"{what}: {f.kind} redacted before recording")
    return r.text
