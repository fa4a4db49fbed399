"""Fixtures of the real OpenClaw host: installed once (a no-op when cached), one fake LLM
and one gateway per xdist worker over a throwaway copy of the example workspace, whose
brain the plugin itself starts (``ocb serve --detach``) when the gateway starts."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integrations.openclaw.fake_llm import FakeLlm, fake_llm
from tests.integrations.openclaw.host import (
    ROOT,
    Gateway,
    Live,
    clean_tmp_openclaw,
    free_port,
    hello,
    install_host,
    ocb_wrapper,
    stop_daemon,
    write_config,
)
from tests.waiting import wait_for


@pytest.fixture(scope="session")
def openclaw_root() -> Path:
    return install_host()


@pytest.fixture(scope="session")
def llm() -> Iterator[FakeLlm]:
    with fake_llm() as fake:
        yield fake


@pytest.fixture(scope="session")
def live(
    openclaw_root: Path, llm: FakeLlm, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    state = tmp_path_factory.mktemp("openclaw")
    workspace = state / "workspace"
    shutil.copytree(ROOT / "examples" / "workspace", workspace)
    ocb = ocb_wrapper(state)
    port = free_port()
    brain = workspace / ".ocb"
    mcp = {"ocb": {"command": str(ocb), "args": ["mcp", "--brain", str(brain)]}}
    write_config(state, workspace, llm.port, port, {"ocb": str(ocb), "toolHints": True}, mcp)
    gw = Gateway(openclaw_root, state, port)
    try:
        gw.start()
        # the plugin's service starts the daemon when the gateway starts
        wait_for(lambda: hello(workspace / ".ocb"), "the daemon the plugin started")
        yield Live(gw, workspace, workspace / ".ocb", ocb)
    finally:
        gw.stop()
        stop_daemon(ocb, workspace / ".ocb")
        clean_tmp_openclaw()
