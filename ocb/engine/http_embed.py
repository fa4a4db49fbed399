"""An embedder behind HTTP: OpenAI-compatible ``/v1/embeddings`` endpoints and Ollama's
``/api/embed``, with the standard library only.

``http:<url>?model=<name>[&dim=N][&batch=B][&timeout=S][&retries=R][&key_env=VAR]``:
the URL's path picks the API. Texts go in batches; a connection error, a timeout, a
429 or a 5xx is retried with exponential backoff; any other answer that is not a
well-formed list of ``dim`` finite numbers per text is an error. ``embed`` returns
every row or raises, so a sync that calls it records nothing on failure. Rows are
cached by the sha256 of the embedder's id and the text (in memory, and in
``<cache_dir>/http-<id>.vec`` when given), so a re-sync embeds only what changed. An
API key is read from the environment variable ``key_env`` (``OPENAI_API_KEY`` for an
OpenAI-style URL) and is never part of the id, the spec or an error.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import struct
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ocb.engine.embed import Matrix
from ocb_events.durable import open_private, private_dir
from ocb_events.errors import EmbedderUnavailable, InputError

_RECORD = struct.Struct("<32sI")  # sha256 of (id, text), then dim float32 follow


def _bad_spec(spec: str, why: str) -> InputError:
    return InputError(
        f"cannot read embedder {spec!r}: {why}",
        "write http:<url>?model=<name>, e.g. http:http://localhost:11434/api/embed?model=all-minilm",
    )


class HttpEmbedder:
    """Vectors from an embeddings endpoint (see the module's doc)."""

    def __init__(
        self, url: str, model: str, *, dim: int = 0, batch: int = 64, timeout: float = 30.0,
        retries: int = 3, key_env: str = "", cache_dir: Path | None = None,
        sleep: Callable[[float], None] = time.sleep, backoff: float = 0.5,
    ) -> None:  # fmt: skip
        self.url, self.model = url, model
        path = urllib.parse.urlsplit(url).path.rstrip("/")
        self.api = "ollama" if path.endswith("/api/embed") else "openai"
        self._dim, self.batch, self.timeout, self.retries = dim, batch, timeout, retries
        self.key_env = key_env or ("OPENAI_API_KEY" if self.api == "openai" else "")
        self._sleep, self._backoff = sleep, backoff
        self._cache_dir = cache_dir
        self._rows: dict[bytes, Matrix] = {}
        self._loaded = False

    @classmethod
    def from_spec(cls, spec: str, *, cache_dir: Path | None = None) -> HttpEmbedder:
        """The embedder a spec names.

        Raises:
            InputError: not an ``http:`` spec with a URL and a model.
        """
        body = spec.removeprefix("http:")
        url, _, query = body.partition("?")
        if not re.match(r"^https?://[^/]+", url):
            raise _bad_spec(spec, "it needs an http:// or https:// URL")
        opts = dict(urllib.parse.parse_qsl(query))
        if not opts.get("model"):
            raise _bad_spec(spec, "it names no model (?model=...)")
        try:
            return cls(
                url, opts["model"], dim=int(opts.get("dim", 0)), batch=int(opts.get("batch", 64)),
                timeout=float(opts.get("timeout", 30)), retries=int(opts.get("retries", 3)),
                key_env=opts.get("key_env", ""), cache_dir=cache_dir,
            )  # fmt: skip
        except ValueError as exc:
            raise _bad_spec(spec, str(exc)) from None

    # ------------------------------------------------------------------ identity

    @property
    def dim(self) -> int:
        """The vectors' length: given, or learned from one call."""
        if not self._dim:
            self._dim = int(self._call(["dimension probe"]).shape[1])
        return self._dim

    @property
    def id(self) -> str:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "-", self.model)
        return f"http-{self.api}-{safe}-d{self.dim}"

    @property
    def spec(self) -> str:
        """The spec that rebuilds this embedder (with its dimension; never a key)."""
        opts = {"model": self.model, "dim": str(self.dim)}
        if self.key_env and self.key_env != "OPENAI_API_KEY":
            opts["key_env"] = self.key_env
        return f"http:{self.url}?{urllib.parse.urlencode(opts)}"

    def __repr__(self) -> str:
        return f"HttpEmbedder({self.spec!r})"

    # ------------------------------------------------------------------ embedding

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Rows for ``texts``: from the cache, the rest from the endpoint in batches.

        Raises:
            EmbedderUnavailable: the endpoint failed or answered something malformed;
                nothing was returned.
        """
        self._load_cache()
        keys = [self._key(t) for t in texts]
        missing = list(dict.fromkeys(i for i, k in enumerate(keys) if k not in self._rows))
        firsts: dict[bytes, int] = {}
        for i in missing:
            firsts.setdefault(keys[i], i)
        todo = sorted(firsts.values())
        fresh: dict[bytes, Matrix] = {}
        for at in range(0, len(todo), self.batch):
            part = todo[at : at + self.batch]
            got = self._call([texts[i] for i in part])
            for i, row in zip(part, got, strict=True):
                fresh[keys[i]] = row
        self._keep(fresh)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = self._rows[k]
        return out

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.model}\0{text}".encode()).digest()

    def _call(self, texts: list[str]) -> Matrix:
        body = json.dumps({"model": self.model, "input": texts}).encode()
        answer = self._post(body)
        try:
            if self.api == "ollama":
                rows = answer["embeddings"]
            else:
                data = sorted(answer["data"], key=lambda d: int(d["index"]))
                rows = [d["embedding"] for d in data]
            m = np.array(rows, dtype=np.float64)
        except (KeyError, TypeError, ValueError):
            raise self._fail("answered JSON without the embeddings in it") from None
        if m.ndim != 2 or m.shape[0] != len(texts):
            raise self._fail(
                f"answered {m.shape[0] if m.ndim else 0} vectors for {len(texts)} texts"
            )
        if self._dim and m.shape[1] != self._dim:
            raise self._fail(f"answered vectors of {m.shape[1]} numbers, not {self._dim}")
        if not np.isfinite(m).all():
            raise self._fail("answered vectors with NaN or infinite numbers")
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return (m / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    def _post(self, body: bytes) -> Any:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.key_env, "") if self.key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(self._backoff * 2 ** (attempt - 1))
            req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310
                    raw = resp.read()
            except urllib.error.HTTPError as exc:
                if exc.code != 429 and exc.code < 500:
                    raise self._fail(f"refused the request (HTTP {exc.code})") from None
                last = f"HTTP {exc.code}"
                continue
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last = (
                    "timed out" if isinstance(reason, TimeoutError) else f"unreachable ({reason})"
                )
                continue
            try:
                return json.loads(raw)
            except ValueError:
                raise self._fail("answered something that is not JSON") from None
        raise self._fail(f"failed {self.retries + 1} times, last: {last}")

    def _fail(self, what: str) -> EmbedderUnavailable:
        return EmbedderUnavailable(
            f"the embedder at {self.url} {what}",
            f"check that the server at {self.url} runs model {self.model!r}; "
            "nothing was recorded, run the command again once it answers",
        )

    # ------------------------------------------------------------------ cache

    def _cache_file(self) -> Path | None:
        if self._cache_dir is None:
            return None
        return self._cache_dir / f"{self.id}.vec"

    def _load_cache(self) -> None:
        """Read the persisted rows once; a torn or damaged tail is ignored."""
        if self._loaded:
            return
        self._loaded = True
        path = self._cache_file()
        if path is None or not path.is_file():
            return
        data = path.read_bytes()
        at = 0
        while at + _RECORD.size <= len(data):
            key, dim = _RECORD.unpack_from(data, at)
            end = at + _RECORD.size + 4 * dim
            if dim != self.dim or end > len(data):
                break
            row = np.frombuffer(data, dtype="<f4", count=dim, offset=at + _RECORD.size)
            if not np.isfinite(row).all() or not math.isclose(float(row @ row), 1.0, abs_tol=1e-3):
                break
            self._rows[key] = row.astype(np.float32)
            at = end
        if at < len(data):  # a torn or damaged tail: appends must follow whole records
            try:
                with open(path, "r+b") as fh:
                    fh.truncate(at)
            except OSError:
                self._cache_dir = None  # cannot mend it: keep rows in memory only

    def _keep(self, fresh: dict[bytes, Matrix]) -> None:
        self._rows.update(fresh)
        path = self._cache_file()
        if path is None or not fresh:
            return
        try:
            private_dir(path.parent)
            with os.fdopen(open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "ab") as fh:
                for key, row in fresh.items():
                    fh.write(_RECORD.pack(key, len(row)) + np.asarray(row, "<f4").tobytes())
        except OSError:
            pass  # a cache: the rows are kept in memory, the next run embeds them again
