"""A loopback fake of an OpenAI chat-completions endpoint, in the test process: it records
every request body (what the model saw: system prompt, prepended context, tool results)
and answers by a script: call offered tools once each, then reply with a canned text (or
fail with an HTTP error)."""

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
    """What the model does: call ``tool`` with ``args``, then each of ``calls`` (name and
    arguments; each once per turn, when offered), then say ``reply``, or answer HTTP
    ``fail`` (an error status) instead."""

    reply: str = "Done."
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    only_if: str = ""
    """Follow the script only in a conversation whose messages contain this text; any
    other (a run a subagent's announcement started in its parent's session, say) gets
    ``Done.``"""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fail: int = 0

    def plan(self) -> list[tuple[str, dict[str, Any]]]:
        return ([(self.tool, self.args)] if self.tool else []) + self.calls


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

    def decide(self, body: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        """``("tool", name, args)``, ``("text", reply, {})`` or ``("fail", "", {})``."""
        msgs = [m for m in body.get("messages") or [] if not _internal(m)]
        offered = [(t.get("function") or {}).get("name") for t in body.get("tools") or []]
        asked = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=-1)
        called = [
            (c.get("function") or {}).get("name")
            for m in msgs[asked + 1 :]
            for c in m.get("tool_calls") or []
        ]
        if self.script.only_if and self.script.only_if not in json.dumps(msgs):
            return "text", "Done.", {}
        for name, args in self.script.plan():
            if name in offered and name not in called:
                return "tool", name, args
        if self.script.fail:
            return "fail", "", {}
        return "text", self.script.reply, {}

    def seen_by(self, marker: str) -> list[dict[str, Any]]:
        """The requests whose messages contain ``marker``."""
        with self._lock:
            return [b for b in self.requests if marker in json.dumps(b.get("messages"))]


def _chunks(kind: str, value: str, args: dict[str, Any], model: str) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}
    if kind == "tool":
        call = {"index": 0, "id": f"call_{value}", "type": "function",
                "function": {"name": value, "arguments": json.dumps(args)}}  # fmt: skip
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
            kind, value, args = fake.decide(body)
            if kind == "fail":
                self._json(
                    {"error": {"message": "the fake model fails", "type": "invalid_request_error"}},
                    fake.script.fail,
                )
                return
            chunks = _chunks(kind, value, args, str(body.get("model", "fake-model")))
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
