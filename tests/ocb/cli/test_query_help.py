"""``ocb query --help`` names every route mode ``--mode`` takes."""

from __future__ import annotations

from typing import get_args

from ocb.settings import RouteMode
from tests.ocb.cli.support import ocb


def test_query_help_lists_every_route_mode() -> None:
    code, out, _ = ocb("query", "--help")
    assert code == 0
    line = " ".join(out.split("--mode", 1)[1].split("--batch", 1)[0].split())
    assert line == "<str> Route mode: edge, edge+sim or learned."
    assert all(mode in line for mode in get_args(RouteMode))
