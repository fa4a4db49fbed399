"""Where a log on PostgreSQL lives, and the connections to it.

NOTE: a URL may carry a password; it is kept only in ``Target.conninfo`` and never
shown: messages, settings and reprs use ``Target.safe``. A driver error is cut to its
first line and any copy of the password in it is masked.

A log URL is a libpq URL with one more query parameter, ``schema`` (default ``ocb``):
the PostgreSQL schema that holds the log's tables, so one database can hold several
logs::

    postgresql://alice@db.example:5432/brains?schema=team

The password comes from the URL, from ``password=`` given to ``Target.parse``, or
from what libpq reads itself (``PGPASSWORD``, ``~/.pgpass``).
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import msgspec

from ocb_events.errors import InputError, LogUnavailable

if TYPE_CHECKING:
    import psycopg

__all__ = ["EXTRA_HINT", "SCHEMES", "Target", "connect", "driver", "is_postgres_url", "reason_of"]

SCHEMES = ("postgresql://", "postgres://")
EXTRA_HINT = "pip install 'ocb[postgres]'"
CONNECT_TIMEOUT_S = 5
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def is_postgres_url(text: str) -> bool:
    """Whether ``text`` names a log on PostgreSQL."""
    return text.startswith(SCHEMES)


class Target(msgspec.Struct, frozen=True):
    """One log on PostgreSQL: ``conninfo`` to connect (may hold the password),
    ``safe`` to show (never does), and the ``schema`` of its tables."""

    conninfo: str
    safe: str
    schema: str
    password: str = ""

    def __repr__(self) -> str:  # the password stays out of tracebacks and logs
        return f"Target({self.safe!r})"

    @property
    def channel(self) -> str:
        """The LISTEN/NOTIFY channel of this log."""
        return f"ocb_{self.schema}"

    @classmethod
    def parse(cls, url: str, *, password: str | None = None) -> Target:
        """Split ``url`` into what connects and what may be shown.

        Raises:
            InputError: not a postgresql:// URL, or a bad ``schema``.
        """
        if not is_postgres_url(url):
            raise InputError(
                f"not a PostgreSQL URL: {strip_password(url)}",
                "pass postgresql://USER@HOST:PORT/DATABASE",
                param="url",
            )
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schema = next((v for k, v in query if k == "schema"), "ocb")
        if not _SCHEMA_NAME.match(schema):
            raise InputError(
                f"bad log schema {schema!r} in the URL",
                "pass ?schema= with lowercase letters, digits and _ (e.g. ?schema=team)",
                param="url",
            )
        rest = [(k, v) for k, v in query if k != "schema"]
        secret = password if password is not None else unquote(parts.password or "")
        secret = secret or next((v for k, v in rest if k == "password"), "")
        shown = [(k, v) for k, v in rest if k != "password"]
        netloc = _netloc(parts)
        safe_query = urlencode(shown + ([("schema", schema)] if schema != "ocb" else []), safe="/")
        safe = urlunsplit((parts.scheme, netloc, parts.path, safe_query, ""))
        conn_query = urlencode(shown)
        conninfo = urlunsplit((parts.scheme, _netloc(parts), parts.path, conn_query, ""))
        return cls(conninfo=conninfo, safe=safe, schema=schema, password=secret)


def _netloc(parts: SplitResult) -> str:
    """The user and host of a URL, without the password."""
    user = parts.username
    host = parts.netloc.rpartition("@")[2]
    if user is None:
        return host
    return f"{quote(unquote(user), safe='')}@{host}"


def strip_password(url: str) -> str:
    """``url`` without a password (for messages about a URL that did not parse)."""
    try:
        parts = urlsplit(url)
        query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "password"])
        return urlunsplit((parts.scheme, _netloc(parts), parts.path, query, ""))
    except ValueError:
        return "<the URL given>"


def driver() -> Any:
    """The psycopg module, imported on first use (the ``postgres`` extra).

    Raises:
        LogUnavailable: psycopg is not installed.
    """
    try:
        return importlib.import_module("psycopg")
    except ImportError:
        raise LogUnavailable(
            "postgresql://", "the PostgreSQL driver (psycopg) is not installed", EXTRA_HINT
        ) from None


def reason_of(exc: BaseException, target: Target) -> str:
    """The first line of a driver error, with the password masked."""
    text: list[str] = str(exc).strip().splitlines()
    line: str = text[0] if text else type(exc).__name__
    line = re.sub(r"^connection failed: ", "", line)
    if target.password:
        line = line.replace(target.password, "***")
    return line


def connect(target: Target, *, autocommit: bool = True) -> psycopg.Connection[Any]:
    """A new connection to the log's database.

    Raises:
        LogUnavailable: the server cannot be reached, or refuses the login.
    """
    pg = driver()
    extra: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_S}
    if target.password:
        extra["password"] = target.password
    try:
        conn: psycopg.Connection[Any] = pg.connect(target.conninfo, autocommit=autocommit, **extra)
    except pg.Error as exc:
        raise LogUnavailable(target.safe, reason_of(exc, target)) from None
    return conn
