"""The window's ASGI app (Starlette): the pages (one static shell, each page a path of
its own), the static files shipped in ``ocb/ui/static`` (by name, nothing else), the
JSON of ``ocb.ui.api`` under ``/api/`` and ``/api/stream``, which tells a page each
time the log grows.

Every response says what it may load (a Content-Security-Policy of its own files only)
and sends no referrer, so the token in the URL goes nowhere else.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from ocb.daemon.protocol import (
    CONFLICT,
    INVALID_PARAMS,
    TIMEOUT,
    TOO_LARGE,
    USER_ERROR,
    RpcError,
)
from ocb.ui import api
from ocb.ui.guard import Guard
from ocb.ui.source import Refused, Source
from ocb_events.errors import OcbError

__all__ = ["PAGES", "STATIC", "build"]

PAGES = ("ask", "history", "why", "memory", "health")
"""The pages, each at ``/<name>``."""

STATIC = {
    "app.css": "text/css",
    "graph.js": "text/javascript",
    "core.js": "text/javascript",
    "ask.js": "text/javascript",
    "history.js": "text/javascript",
    "why.js": "text/javascript",
    "memory.js": "text/javascript",
    "health.js": "text/javascript",
    "app.js": "text/javascript",
}
"""The only files served from ``ocb/ui/static`` (besides the shell, ``index.html``)."""

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
STREAM_POLL_S = 0.5
"""How often ``/api/stream`` looks at the log's last seq."""

Handler = Callable[[Request], Awaitable[Response]]


def _json(data: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(data), status, HEADERS, "application/json")


def _error(status: int, message: str, hint: str = "") -> Response:
    return _json({"error": message, "hint": hint}, status)


def _asset(name: str) -> str:
    return resources.files("ocb.ui").joinpath("static", name).read_text("utf-8")


def build(source: Source, guard: Guard, *, stop: asyncio.Event | None = None) -> Starlette:
    """The app over ``source``, admitting what ``guard`` admits; ``stop`` set ends the
    open streams (so that the server can stop)."""
    w = _Window(source, guard, stop or asyncio.Event())
    s = source

    def q(r: Request, name: str) -> str | None:
        return r.query_params.get(name)

    routes = [
        Route("/", w.admitted(w.root)),
        *(Route(f"/{name}", w.admitted(w.page, page=True)) for name in PAGES),
        Route("/static/{name}", w.admitted(w.static)),
        Route("/api/info", w.get(lambda r: api.info(s))),
        Route("/api/ask", w.get(lambda r: api.ask(s, q(r, "q"), q(r, "top")))),
        Route("/api/history", w.get(lambda r: api.history(s))),
        Route("/api/asof", w.get(lambda r: api.asof(s, q(r, "seq")))),
        Route("/api/diff", w.get(lambda r: api.diff(s, q(r, "from"), q(r, "to")))),
        Route(
            "/api/why", w.get(lambda r: api.why(s, q(r, "node"), q(r, "source"), q(r, "target")))
        ),
        Route("/api/whatif", w.get(lambda r: api.whatif(s, q(r, "rule")))),
        Route("/api/memory", w.get(lambda r: api.memory(s, q(r, "q"), q(r, "entity")))),
        Route("/api/health", w.get(lambda r: api.health(s))),
        Route("/api/doctor", w.get(lambda r: api.doctor(s))),
        Route("/api/moves", w.get(lambda r: api.moves(s))),
        Route("/api/file", w.get(lambda r: api.file_at(s, q(r, "path"), q(r, "seq")))),
        Route("/api/stream", w.admitted(w.stream)),
        Route("/api/learn", w.post(lambda b: api.learn(s, b)), methods=["POST"]),
        Route("/api/correct", w.post(lambda b: api.correct(s, b)), methods=["POST"]),
        Route("/api/retract", w.post(lambda b: api.retract(s, b)), methods=["POST"]),
    ]
    return Starlette(routes=routes)


class _Window:
    """The handlers of one window."""

    def __init__(self, source: Source, guard: Guard, stop: asyncio.Event) -> None:
        self.source = source
        self.guard = guard
        self.stop = stop
        self.shell = _asset("index.html")
        self.assets = {name: _asset(name) for name in STATIC}

    def admitted(self, handler: Handler, *, write: bool = False, page: bool = False) -> Handler:
        """``handler`` behind the guard's checks (a page given the token in its URL
        sets the cookie that carries it afterwards)."""
        guard = self.guard

        async def run(request: Request) -> Response:
            if not guard.host_ok(request.headers):
                return _error(403, "this window answers only at 127.0.0.1 or localhost")
            if not guard.token_ok(request.headers, request.query_params, request.cookies):
                return _error(403, "the window's token is missing or wrong",
                              "open the URL that ocb ui printed")  # fmt: skip
            why = guard.write_refusal(request.headers) if write else ""
            if why:
                hint = "" if guard.writes else "start the window with ocb ui --allow-writes"
                return _error(403, why, hint)
            response = await handler(request)
            if page and request.query_params.get("token"):
                response.set_cookie(guard.cookie, guard.token, httponly=True,
                                    samesite="strict", path="/")  # fmt: skip
            return response

        return run

    def get(self, fn: Callable[[Request], Any]) -> Handler:
        async def run(request: Request) -> Response:
            return await _call(lambda: fn(request))

        return self.admitted(run)

    def post(self, fn: Callable[[dict[str, Any]], Any]) -> Handler:
        async def run(request: Request) -> Response:
            try:
                got = msgspec.json.decode(await request.body())
            except msgspec.DecodeError:
                return _error(400, "the body is not JSON", "send a JSON object")
            if not isinstance(got, dict):
                return _error(400, "the body is not a JSON object", "send a JSON object")
            return await _call(lambda: fn(got))

        return self.admitted(run, write=True)

    async def page(self, request: Request) -> Response:
        filled = self.shell.replace("{{token}}", html.escape(self.guard.token, quote=True))
        filled = filled.replace("{{writes}}", "true" if self.guard.writes else "false")
        return Response(filled, 200, HEADERS, "text/html")

    async def root(self, request: Request) -> Response:
        return RedirectResponse("/ask", 303, HEADERS)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self.assets:
            return _error(404, "no such file")
        return Response(self.assets[name], 200, HEADERS, STATIC[name])

    async def stream(self, request: Request) -> Response:
        """Server-sent events: ``{"last_seq": N}`` first and each time the log grows."""
        source, ending = self.source, self.stop

        async def events() -> AsyncIterator[bytes]:
            last = -1
            yield b"retry: 2000\n\n"
            while not ending.is_set():
                try:
                    seq = await run_in_threadpool(source.last_seq)
                except (RpcError, OcbError, OSError):
                    seq = last
                if seq != last:
                    last = seq
                    yield b"data: " + msgspec.json.encode({"last_seq": seq}) + b"\n\n"
                if await request.is_disconnected():
                    return
                try:
                    await asyncio.wait_for(ending.wait(), STREAM_POLL_S)
                except TimeoutError:
                    pass

        headers = dict(HEADERS) | {"x-accel-buffering": "no"}
        return StreamingResponse(events(), 200, headers, "text/event-stream")


async def _call(fn: Callable[[], Any]) -> Response:
    """``fn()`` in a worker thread as JSON, or the error it raised."""
    try:
        return _json(await run_in_threadpool(fn))
    except asyncio.CancelledError:  # the window stops: the call's answer is dropped
        return _error(503, "the window is stopping", "start ocb ui again")
    except Refused as exc:
        return _error(403, exc.message, exc.hint)
    except OcbError as exc:
        return _error(400, exc.message, exc.hint)
    except RpcError as exc:
        user = exc.code in (USER_ERROR, INVALID_PARAMS, CONFLICT, TIMEOUT, TOO_LARGE)
        return _error(400 if user else 500, exc.message, exc.hint)
