"""The daemon's ``search`` and ``context`` methods tried as a hostile client would: bad
shapes and sizes are refused in one line or kept within bounds, no hit names a file
outside the workspace, and the daemon keeps serving."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocb.daemon.protocol import INVALID_PARAMS, USER_ERROR, RpcError
from tests.ocb.daemon.support import daemon, hello, rpc

QUESTION = "how do I roll back a bad deploy"


def _refused(brain: Path, method: str, **params: object) -> RpcError:
    with pytest.raises(RpcError) as info:
        rpc(brain, method, **params)
    assert "\n" not in info.value.message
    return info.value


def test_search_and_context_refuse_or_bound_what_a_client_sends(built: Path) -> None:
    with daemon(built):
        for params in (
            {"text": QUESTION, "style": "raw"},
            {"text": QUESTION, "path": "/etc/passwd"},
            {"text": QUESTION, "top": "5; DROP"},
            {"text": QUESTION, "actor": "root"},
        ):
            got = _refused(built, "search", **params)
            assert got.code in (INVALID_PARAMS, USER_ERROR), (params, got)
        assert _refused(built, "search", text="   ").code == USER_ERROR
        assert _refused(built, "search", text=QUESTION, top=0).code == USER_ERROR
        assert _refused(built, "context", text=QUESTION, budget="all").code == INVALID_PARAMS
        for budget in (-(10**12), 0, 50, 2000, 10**12):
            got = rpc(built, "context", text=QUESTION, budget=budget)
            assert len(got["text"]) <= max(budget, 0), budget
            assert set(got["used"]) <= set(got["fired"])
        found = rpc(built, "search", text="../../etc/passwd ~/.ssh/id_rsa", top=50, record=False)
        for hit in found["results"]:
            assert not hit["path"].startswith(("/", "~")) and ".." not in hit["path"].split("/")
        assert hello(built) is not None, "the daemon still serves"
