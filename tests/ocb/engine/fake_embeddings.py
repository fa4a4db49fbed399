"""A real HTTP server on loopback that answers embedding requests in the OpenAI and
Ollama shapes, with deterministic vectors, and misbehaves on request."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIM = 8


def vector(text: str, dim: int = DIM) -> list[float]:
    """A deterministic vector of a text."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 127.5) / 127.5 for b in digest[:dim]]


@dataclass
class Script:
    """What the server does: ``fail`` answers this status that many times first;
    ``mode`` misbehaves on every answer (``hang``, ``garbage``, ``short``, ``wide``,
    ``nan``); every request's batch size and headers are kept."""

    fail: int = 0
    status: int = 503
    mode: str = ""
    batches: list[int] = field(default_factory=list)
    auth: list[str] = field(default_factory=list)


@contextmanager
def serving(script: Script) -> Iterator[str]:
    """Serve ``script`` on 127.0.0.1; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"]
            script.batches.append(len(texts))
            script.auth.append(self.headers.get("Authorization", ""))
            if script.fail > 0:
                script.fail -= 1
                self.send_error(script.status)
                return
            if script.mode == "hang":
                time.sleep(1.0)
            rows = [vector(t) for t in texts]
            if script.mode == "short":
                rows = rows[:-1]
            if script.mode == "wide":
                rows = [r + [0.5] for r in rows]
            if script.mode == "nan":
                rows[0][0] = float("nan")
            if self.path.endswith("/api/embed"):
                answer: Any = {"model": body["model"], "embeddings": rows}
            else:
                data = [
                    {"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)
                ]
                answer = {"object": "list", "data": data[::-1], "model": body["model"]}
            raw = b"{not json" if script.mode == "garbage" else json.dumps(answer).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except OSError:  # the client gave up (a timeout test)
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
