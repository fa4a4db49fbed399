"""A loopback fake of an OpenAI chat-completions endpoint, in the test process: it records
every request body (what the model saw: system prompt, prepended context, tool results)
and answers by a script: call one offered tool once, then reply with a canned text."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLlm", "Script", "fake_llm"]


@dataclass
class Script:
    """What the model does: call ``tool`` (if offered, once per turn) with ``args``, then
    say ``reply``."""

    reply: str = "Done."
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    only_if: str = ""
    """Call ``tool`` only in a conversation whose messages contain this text."""


def _internal(m: dict[str, Any]) -> bool:
    c = m.get("content")
    s = c if isinstance(c, str) else json.dumps(c)
    return m.get("role") == "user" and "BEGIN_OPENCLAW_INTERNAL_CONTEXT" in s


class FakeLlm:
    """The server; ``requests`` holds every chat request body, in arrival order."""

    def __init__(self) -> None:
        self.script = Script()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def decide(self, body: dict[str, Any]) -> tuple[str, str]:
        msgs = [m for m in body.get("messages") or [] if not _internal(m)]
        offered = [(t.get("function") or {}).get("name") for t in body.get("tools") or []]
        called = any(m.get("role") == "tool" for m in msgs[-1:])
        wanted = not self.script.only_if or self.script.only_if in json.dumps(msgs)
        if self.script.tool and self.script.tool in offered and not called and wanted:
            return "tool", self.script.tool
        return "text", self.script.reply

    def seen_by(self, marker: str) -> list[dict[str, Any]]:
        """The requests whose messages contain ``marker``."""
        with self._lock:
            return [b for b in self.requests if marker in json.dumps(b.get("messages"))]


def _chunks(fake: FakeLlm, kind: str, value: str, model: str) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}
    if kind == "tool":
        call = {"index": 0, "id": "call_1", "type": "function",
                "function": {"name": value, "arguments": json.dumps(fake.script.args)}}  # fmt: skip
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": value}
        finish = "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": usage},
    ]


def _handler(fake: FakeLlm) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, obj: Any, status: int = 200) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
            else:
                self._json({"error": "not found"}, 404)

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(n) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json({"error": "not found"}, 404)
                return
            fake.record(body)
            kind, value = fake.decide(body)
            chunks = _chunks(fake, kind, value, str(body.get("model", "fake-model")))
            if not body.get("stream"):
                d = chunks[0]["choices"][0]["delta"]
                calls = {"tool_calls": d["tool_calls"]} if "tool_calls" in d else {}
                msg = {"role": "assistant", "content": d.get("content"), **calls}
                finish = chunks[1]["choices"][0]["finish_reason"]
                self._json({"id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
                            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                            "usage": chunks[2]["usage"]})  # fmt: skip
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for c in chunks:
                self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


@contextmanager
def fake_llm() -> Iterator[FakeLlm]:
    fake = FakeLlm()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
