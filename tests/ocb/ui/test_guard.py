"""``ocb ui`` attacked over HTTP: the real command on a real socket, requests without
its token, for another host, from another origin, writes in a read-only window, paths
that try to leave the package or the workspace; and what it records (nothing but what
a write asks, never its token)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import msgspec
import pytest

from ocb.brain import Brain
from ocb.daemon.protocol import connect
from tests.ocb.ui.window import Window, ocb_argv, ocb_env, request, window
from tests.waiting import wait_for

PATHS = ["/ask", "/history", "/why", "/memory", "/health", "/static/app.js",
         "/api/info", "/api/ask?q=deploy", "/api/health", "/api/stream"]  # fmt: skip


def _last_seq(brain: Path) -> int:
    with Brain(brain, writer=False) as b:
        return b.log.last_seq


def _error(body: bytes) -> str:
    got = msgspec.json.decode(body)
    assert set(got) == {"error", "hint"}, got
    assert "\n" not in got["error"] and "Traceback" not in got["error"]
    return str(got["error"])


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, example_brain: Path) -> Path:
    """One copy of the example brain for the read-only checks of this module."""
    import shutil

    path = tmp_path_factory.mktemp("ui") / "brain"
    shutil.copytree(example_brain, path)
    return path


@pytest.fixture(scope="module")
def ro(shared: Path) -> object:
    with window(shared) as w:
        yield w


def test_the_first_line_is_the_url_on_loopback_with_a_token(ro: Window) -> None:
    assert ro.url == f"http://127.0.0.1:{ro.port}/ask?token={ro.token}"
    assert len(ro.token) >= 40  # 256 random bits
    status, _, body = request(ro.url)
    assert status == 200 and b"<main" in body


@pytest.mark.parametrize("path", PATHS)
def test_a_request_without_the_token_or_with_another_is_refused(ro: Window, path: str) -> None:
    for headers in ({}, {"X-OCB-Token": ro.token[:-1] + ("A" if ro.token[-1] != "A" else "B")},
                    {"Cookie": f"ocb_ui_{ro.port}=nope"}):  # fmt: skip
        status, _, body = request(ro.base + path, headers=headers)
        assert status == 403, (path, headers, status)
        assert "token" in _error(body)
        assert b"lumen" not in body.lower()  # nothing of the brain


def test_the_token_in_the_url_sets_a_strict_cookie_that_admits_later_requests(ro: Window) -> None:
    status, headers, _ = request(f"{ro.base}/history?token={ro.token}")
    assert status == 200
    cookie = headers["set-cookie"]
    assert cookie.startswith(f"ocb_ui_{ro.port}={ro.token};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    status, _, body = request(
        f"{ro.base}/api/info", headers={"Cookie": f"ocb_ui_{ro.port}={ro.token}"}
    )
    assert status == 200 and msgspec.json.decode(body)["writes"] is False


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1",
                                  "localhost.evil.example:{port}", ""])  # fmt: skip
def test_a_request_for_another_host_is_refused_even_with_the_token(ro: Window, host: str) -> None:
    # a page of another site whose name was rebound to 127.0.0.1 sends its own Host
    status, _, body = ro.get("/api/info", headers={"Host": host.format(port=ro.port)})
    assert status == 403 and "127.0.0.1" in _error(body)


def test_every_answer_says_what_it_may_load_and_sends_no_referrer(ro: Window) -> None:
    for path in ("/ask", "/static/app.js", "/api/info"):
        _, headers, _ = ro.get(path)
        assert "script-src 'self'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("path", ["/static/../../../../etc/passwd", "/static/..%2f..%2fapi.py",
                                  "/static/index.html", "/static/%2e%2e/source.py",
                                  "/static/app.js%00.png", "/static/__init__.py"])  # fmt: skip
def test_static_serves_its_named_files_and_nothing_else(ro: Window, path: str) -> None:
    status, _, body = ro.get(path)
    assert status == 404, (path, status)
    assert b"root:" not in body and b"import" not in body


@pytest.mark.parametrize("path", ["../../../../etc/passwd", "/etc/passwd", "../brain/log",
                                  "runbooks/../../../etc/hostname"])  # fmt: skip
def test_a_file_outside_the_workspace_is_refused(ro: Window, path: str) -> None:
    from urllib.parse import quote

    status, _, body = ro.get(f"/api/file?path={quote(path)}")
    assert status == 400, (path, status, body[:200])
    _error(body)
    assert b"root:" not in body


def test_a_workspace_file_is_shown_as_recorded(ro: Window) -> None:
    got = ro.api("/api/file?path=runbooks/deploy.md")
    assert got["path"] == "runbooks/deploy.md" and got["text"].startswith("# Deploy runbook")


@pytest.mark.parametrize(("path", "words"), [
    ("/api/ask", "no question"), ("/api/ask?q=%20%20", "no question"),
    ("/api/ask?q=" + "x" * 2001, "characters long"), ("/api/ask?q=a&top=zero", "whole number"),
    ("/api/asof?seq=abc", "whole number"), ("/api/asof?seq=0", "at least 1"),
    ("/api/why", "name a chunk"), ("/api/whatif?rule=sgd", "unknown rule"),
    ("/api/diff", "no from"),
])  # fmt: skip
def test_bad_input_is_one_line_naming_the_fix(ro: Window, path: str, words: str) -> None:
    status, _, body = ro.get(path)
    assert status == 400, (path, status)
    assert words in _error(body)
    assert msgspec.json.decode(body)["hint"]


def test_a_read_only_window_records_nothing_and_refuses_writes(ro: Window, shared: Path) -> None:
    before = _last_seq(shared)
    answer = ro.api("/api/ask?q=how+do+I+deploy")
    assert answer["recorded"] is False and answer["answer"]["trace_id"] == ""
    assert answer["answer"]["walk"]["steps"], "the walk is answered without a record"
    ro.api("/api/history")
    ro.api("/api/health")
    for path, body in (("/api/learn", {"trace_id": "t1", "outcome": 1}),
                       ("/api/correct", {"trace_id": "t1", "content": "no"}),
                       ("/api/retract", {"trace_id": "t1"})):  # fmt: skip
        status, _, got = ro.post(path, body)
        assert status == 403 and "read-only" in _error(got)
        assert "--allow-writes" in msgspec.json.decode(got)["hint"]
    assert _last_seq(shared) == before


def test_a_read_only_window_leaves_the_brain_to_other_commands(ro: Window, shared: Path) -> None:
    with Brain(shared) as b:  # the writer lock is free: ocb query ... works beside it
        b.query("who is on call", record=False)


def test_writes_need_the_header_token_json_and_the_windows_origin(built: Path) -> None:
    with window(built, writes=True) as w:
        asked = w.api("/api/ask?q=how+do+I+roll+back+a+bad+deploy")["answer"]
        good = {"trace_id": asked["trace_id"], "outcome": 1, "used": asked["fired"][:2]}
        before = _last_seq(built)
        cookie = {"Cookie": f"ocb_ui_{w.port}={w.token}"}
        refusals = [
            ({"X-OCB-Token": ""} | cookie, "X-OCB-Token"),  # a form of another site
            ({"Origin": "http://evil.example"}, "another origin"),
            ({"Origin": f"http://127.0.0.1:{w.port + 1}"}, "another origin"),
            ({"Sec-Fetch-Site": "cross-site"}, "another site"),
            ({"Content-Type": "text/plain"}, "application/json"),
        ]
        for headers, words in refusals:
            status, _, body = w.post("/api/learn", good, headers)
            assert status == 403, headers
            assert words in _error(body)
        assert _last_seq(built) == before
        for body in ({"trace_id": asked["trace_id"], "outcome": 2},
                     {"trace_id": asked["trace_id"], "outcome": True},
                     {"trace_id": asked["trace_id"], "outcome": 1, "used": "all"},
                     {"trace_id": 7, "outcome": 1}, {"trace_id": ["t1"], "outcome": 1},
                     {"outcome": 1}):  # fmt: skip
            status, _, got = w.post("/api/learn", body)
            assert status == 400, body
            _error(got)
        status, _, got = w.post("/api/learn", good, {"Origin": f"http://127.0.0.1:{w.port}"})
        assert status == 200, got
        assert _last_seq(built) > before
    with Brain(built, writer=False) as b:
        outcomes = list(b.events(types=["outcome_recorded"]))
    assert outcomes and outcomes[-1].actor == "ui"
    assert outcomes[-1].event.trace_id == asked["trace_id"]  # type: ignore[attr-defined]


def test_the_token_never_reaches_the_brain(built: Path) -> None:
    with window(built, writes=True) as w:
        asked = w.api(f"/api/ask?q=deploy&token={w.token}")["answer"]
        w.post("/api/correct", {"trace_id": asked["trace_id"], "content": f"not {w.token}"[:4]})
        w.post("/api/learn", {"trace_id": asked["trace_id"], "outcome": -1})
        w.get(f"/history?token={w.token}")
    needle = w.token.encode()
    for f in built.rglob("*"):
        if f.is_file():
            assert needle not in f.read_bytes(), f


def test_the_window_shows_the_live_brain_through_its_daemon(built: Path) -> None:
    env = ocb_env()
    subprocess.run(ocb_argv("serve", "--brain", str(built), "--detach"), env=env, check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    try:
        with window(built, writes=True) as w:
            assert w.api("/api/info")["mode"] == "daemon"
            import urllib.request

            req = urllib.request.Request(w.base + "/api/stream", headers={"X-OCB-Token": w.token})
            with urllib.request.urlopen(req, timeout=60) as stream:
                seen: list[int] = []

                def next_seq() -> int:
                    while True:
                        line = stream.readline().decode().strip()
                        if line.startswith("data: "):
                            return int(msgspec.json.decode(line[6:])["last_seq"])

                seen.append(next_seq())
                # another client of the same daemon records a query
                done = subprocess.run(
                    ocb_argv("query", "who is on call", "--brain", str(built), "--json"),
                    env=env, capture_output=True, text=True, timeout=120,
                )  # fmt: skip
                assert done.returncode == 0, done.stderr
                seen.append(next_seq())
            assert seen[1] > seen[0]
            assert w.api("/api/health")["status"]["mode"] == "daemon"
    finally:
        subprocess.run(ocb_argv("serve", "stop", "--brain", str(built)), env=env,
                       capture_output=True, timeout=120)  # fmt: skip
        wait_for(lambda: connect(built, timeout=1) is None, "the daemon to stop", 60)


def test_a_missing_brain_or_a_taken_port_is_one_line(tmp_path: Path, ro: Window) -> None:
    env = ocb_env()
    for argv, words in (
        (["ui", "--brain", str(tmp_path / "none"), "--no-open"], "brain"),
        (["ui", "--brain", str(tmp_path), "--no-open", "--port", str(ro.port)], "cannot listen"),
        (["ui", "--brain", str(tmp_path), "--no-open", "--port", "70000"], "not a port"),
    ):
        done = subprocess.run(ocb_argv(*argv), env=env, capture_output=True, text=True,
                              timeout=60)  # fmt: skip
        assert done.returncode == 1, (argv, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith("error: ") and words in done.stderr.splitlines()[0]
        assert done.stderr.splitlines()[1].startswith("hint: ")


@pytest.mark.parametrize("missing", ["starlette", "uvicorn"])
def test_without_the_extra_it_says_how_to_install_it(built: Path, missing: str) -> None:
    import shlex
    import sys

    from tests.ocb.ui.window import ROOT

    blocked = f"import sys; sys.modules[{missing!r}] = None; from ocb.entry import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", blocked, "ui", "--brain", str(built), "--no-open"],
        env=ocb_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: ocb ui needs the optional ui packages",
        f"hint: {shlex.quote(sys.executable)} -m pip install -e {shlex.quote(f'{ROOT}[ui]')}",
    ]
    assert done.stdout == ""


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as got:
            return bool(got.status == 200)
    except OSError:
        return False


def test_without_no_open_it_opens_the_url_in_the_users_browser(built: Path, tmp_path: Path) -> None:
    import signal

    opened = tmp_path / "opened"
    opener = tmp_path / "open-browser"
    opener.write_text(f'#!/bin/sh\nprintf %s "$1" > "{opened}"\n')
    opener.chmod(0o755)
    proc = subprocess.Popen(
        ocb_argv("ui", "--brain", str(built)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=ocb_env() | {"BROWSER": str(opener), "DISPLAY": ""},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        wait_for(lambda: opened.exists() and opened.read_text(), "the browser to be opened", 60)
        assert opened.read_text() == url and "token=" in url
        # the window serves once the browser command has returned: Ctrl-C then stops it
        wait_for(lambda: _answers(url), "the window to serve", 60)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "Traceback" not in err, err


def test_a_read_only_window_follows_what_other_commands_record(built: Path) -> None:
    with window(built) as w:
        before = w.api("/api/info")["last_seq"]
        w.api("/api/health")  # the window has loaded the brain as it was
        with Brain(built) as b:  # another command records beside the window
            b.learn(1.0, trace_id=b.query("who is on call this week").trace_id, rule="pg")
            now = b.log.last_seq
        assert now > before
        wait_for(lambda: w.api("/api/info")["last_seq"] == now, "the window to see them", 30)
        days = w.api("/api/history")["days"]
        assert sum(d["n"] for d in days) == now
        assert any(d["kind"] == "outcome" for d in days)
