"""The HTTP embedder against a real server on loopback: both API shapes, batching,
retries with backoff, timeouts, malformed answers, the content-hash cache, the key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ocb.engine.http_embed import HttpEmbedder
from ocb_events.errors import EmbedderUnavailable, InputError
from tests.ocb.engine.fake_embeddings import DIM, Script, serving, vector


def unit(rows: list[list[float]]) -> np.ndarray:
    m = np.array(rows, dtype=np.float64)
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def make(url: str, **kw: object) -> tuple[HttpEmbedder, list[float]]:
    slept: list[float] = []
    emb = HttpEmbedder.from_spec(
        f"http:{url}?model=mini&dim={DIM}", cache_dir=kw.pop("cache", None)
    )  # type: ignore[arg-type]
    emb._sleep = slept.append
    for k, v in kw.items():
        setattr(emb, k, v)
    return emb, slept


@pytest.mark.parametrize("path", ["/v1/embeddings", "/api/embed"])
def test_both_api_shapes_give_unit_rows_in_order_in_batches(path: str) -> None:
    script = Script()
    with serving(script) as base:
        emb, _ = make(base + path)
        texts = [f"note {i}" for i in range(150)]
        got = emb.embed(texts)
    assert got.dtype == np.float32 and got.shape == (150, DIM)
    assert np.allclose(got, unit([vector(t) for t in texts]), atol=1e-6)
    assert script.batches == [64, 64, 22]
    assert emb.api == ("ollama" if path == "/api/embed" else "openai")
    assert emb.id == f"http-{emb.api}-mini-d{DIM}" and emb.dim == DIM


def test_the_dimension_is_learned_by_one_call_when_the_spec_leaves_it_out() -> None:
    script = Script()
    with serving(script) as base:
        emb = HttpEmbedder.from_spec(f"http:{base}/v1/embeddings?model=mini")
        assert emb.dim == DIM and script.batches == [1]
        assert emb.spec == f"http:{base}/v1/embeddings?model=mini&dim={DIM}"


def test_5xx_and_429_are_retried_with_growing_backoff() -> None:
    script = Script(fail=2, status=503)
    with serving(script) as base:
        emb, slept = make(base + "/v1/embeddings")
        got = emb.embed(["a", "b"])
    assert np.allclose(got, unit([vector("a"), vector("b")]), atol=1e-6)
    assert script.batches == [2, 2, 2] and slept == [0.5, 1.0]
    script = Script(fail=1, status=429)
    with serving(script) as base:
        emb, slept = make(base + "/v1/embeddings")
        emb.embed(["a"])
    assert slept == [0.5]


def test_a_server_that_keeps_failing_is_a_clear_error_without_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    script = Script(fail=99, status=500)
    with serving(script) as base:
        emb, slept = make(base + "/v1/embeddings")
        with pytest.raises(EmbedderUnavailable) as err:
            emb.embed(["a"])
    assert len(script.batches) == 4 and slept == [0.5, 1.0, 2.0]
    text = f"{err.value.message} {err.value.hint} {emb.spec} {emb.id} {emb!r}"
    assert base in err.value.message and "HTTP 500" in err.value.message
    assert "sk-secret" not in text
    assert script.auth[0] == "Bearer sk-secret-123"


def test_a_refusal_is_not_retried() -> None:
    script = Script(fail=5, status=401)
    with serving(script) as base:
        emb, slept = make(base + "/v1/embeddings")
        with pytest.raises(EmbedderUnavailable, match="HTTP 401"):
            emb.embed(["a"])
    assert script.batches == [1] and slept == []


def test_a_server_that_hangs_times_out() -> None:
    with serving(Script(mode="hang")) as base:
        emb, slept = make(base + "/v1/embeddings", timeout=0.2, retries=1)
        with pytest.raises(EmbedderUnavailable, match="timed out"):
            emb.embed(["a"])
    assert slept == [0.5]


@pytest.mark.parametrize(
    ("mode", "says"),
    [("garbage", "not JSON"), ("short", "vectors for"), ("wide", "not 8"), ("nan", "NaN")],
)
def test_a_malformed_answer_is_a_clear_error(mode: str, says: str) -> None:
    with serving(Script(mode=mode)) as base:
        emb, _ = make(base + "/v1/embeddings")
        with pytest.raises(EmbedderUnavailable, match=says):
            emb.embed(["a", "b"])


def test_nothing_comes_back_when_a_later_batch_fails() -> None:
    script = Script()
    with serving(script) as base:
        emb, _ = make(base + "/v1/embeddings", batch=2, retries=0)
        script.fail, script.status = 0, 500
        script.mode = ""
        emb.embed(["a", "b"])  # cached
        script.fail = 99
        with pytest.raises(EmbedderUnavailable):
            emb.embed(["a", "b", "c", "d"])
    assert script.batches[-1] == 2  # c and d only: a and b came from the cache


def test_the_cache_sends_only_new_texts_and_survives_a_new_process(tmp_path: Path) -> None:
    script = Script()
    with serving(script) as base:
        emb, _ = make(base + "/v1/embeddings", cache=tmp_path)
        first = emb.embed(["a", "b", "a"])
        assert script.batches == [2]
        emb.embed(["a", "b"])
        assert script.batches == [2]
        emb.embed(["b", "c"])
        assert script.batches == [2, 1]
        again, _ = make(base + "/v1/embeddings", cache=tmp_path)
        assert np.array_equal(again.embed(["a", "b"]), first[:2])
        assert script.batches == [2, 1]
        path = tmp_path / f"{emb.id}.vec"
        path.write_bytes(path.read_bytes()[:-7])  # a torn tail
        torn, _ = make(base + "/v1/embeddings", cache=tmp_path)
        assert np.allclose(torn.embed(["a", "b", "c"]), unit([vector(t) for t in "abc"]), atol=1e-6)
        assert script.batches == [2, 1, 1]  # the torn row, embedded again


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 9))
def test_any_batch_size_gives_the_same_rows(batch: int) -> None:
    with serving(Script()) as base:
        one, _ = make(base + "/api/embed", batch=1)
        many, _ = make(base + "/api/embed", batch=batch)
        texts = [f"t{i}" for i in range(10)]
        assert np.array_equal(one.embed(texts), many.embed(texts))


@pytest.mark.parametrize(
    "spec",
    ["http:localhost:1/x?model=m", "http:http://h/v1/embeddings", "http:http://h/x?model=m&dim=x"],
)
def test_a_bad_spec_names_the_fix(spec: str) -> None:
    with pytest.raises(InputError) as err:
        HttpEmbedder.from_spec(spec)
    assert "http:<url>?model=<name>" in err.value.hint
