"""Who may use the window: a request is admitted only with the window's token (in the
URL once, then a cookie of this port; an API call may send it as ``X-OCB-Token``), only
for the window's own host (``127.0.0.1`` or ``localhost`` at its port: a page of another
site that renamed its host to this address is refused), and a write only with writes on,
the token in its header (a page of another site cannot set one), JSON, and an origin of
the window's own.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping

__all__ = ["Guard", "new_token"]

HEADER = "x-ocb-token"


def new_token() -> str:
    """A random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class Guard:
    """The checks of one window (``port``: the port it listens on)."""

    def __init__(self, token: str, port: int, *, writes: bool) -> None:
        self.token = token
        self.port = port
        self.writes = writes
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
        self.origins = frozenset(f"http://{h}" for h in self.hosts)

    @property
    def cookie(self) -> str:
        """The name of the cookie that carries the token (one per port: two windows on
        one machine do not overwrite each other's)."""
        return f"ocb_ui_{self.port}"

    def _same(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def host_ok(self, headers: Mapping[str, str]) -> bool:
        """Whether the request names this window's host (DNS rebinding refused)."""
        return headers.get("host", "") in self.hosts

    def token_ok(
        self, headers: Mapping[str, str], query: Mapping[str, str], cookies: Mapping[str, str]
    ) -> bool:
        """Whether the request carries the token (URL, header or cookie)."""
        return (
            self._same(query.get("token"))
            or self._same(headers.get(HEADER))
            or self._same(cookies.get(self.cookie))
        )

    def write_refusal(self, headers: Mapping[str, str]) -> str:
        """Why a write request is refused ("" when it is not)."""
        if not self.writes:
            return "this window is read-only"
        if not self._same(headers.get(HEADER)):
            return "a write must carry the window's token in its X-OCB-Token header"
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return f"a write from another origin ({origin}) is refused"
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return "a write from another site is refused"
        if headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return "a write must be sent as application/json"
        return ""
