"""The MCP server: ``memory_search`` round trips through the official SDK's client over
stdio to ``ocb mcp`` attached to a daemon, beside the same query sent straight to the
daemon's socket, on the example workspace and on a ~10,000-chunk one; and the time from
spawning ``ocb mcp`` to its first answer.

    .venv/bin/python benchmarks/bench_mcp.py                 # example + ~10k chunks
    .venv/bin/python benchmarks/bench_mcp.py --files 100     # quick

Every search is recorded (a trace), as a host's would be. The table gives medians (p50)
and p95 in milliseconds. This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from bench_core import make_workspace  # noqa: E402
from live_support import ENV, init, pct, served  # noqa: E402

from ocb.daemon.protocol import call, connect  # noqa: E402

EXAMPLE_QUESTIONS = [
    "how do I roll back a bad deploy",
    "who owns the database migrations",
    "what should on-call do first in an incident",
    "postgres connection pool tuning",
    "feature flag cleanup policy",
    "when do deploys freeze",
    "hotfix process for production",
    "alerting thresholds for latency",
]


def direct(brain: Path, queries: list[str]) -> list[float]:
    sock = connect(brain, timeout=120)
    assert sock is not None
    out = []
    with sock:
        reader = sock.makefile("rb")
        for q in queries:
            t0 = time.perf_counter()
            call(sock, "query", {"text": q, "top": 5}, reader=reader)
            out.append(time.perf_counter() - t0)
    return out


async def through_mcp(brain: Path, queries: list[str]) -> tuple[float, list[float]]:
    """(spawn -> initialized -> first search answered, each search's round trip)."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ocb.entry", "mcp", "--brain", str(brain)], env=ENV
    )
    t0 = time.perf_counter()
    with open(os.devnull, "w") as err:
        async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            first = await s.call_tool("memory_search", {"query": queries[0]})
            start = time.perf_counter() - t0
            assert not first.is_error
            out = []
            for q in queries:
                t1 = time.perf_counter()
                got = await s.call_tool("memory_search", {"query": q, "limit": 5})
                out.append(time.perf_counter() - t1)
                assert not got.is_error
    return start, out


def measure(name: str, ws: Path, brain: Path, queries: list[str]) -> list[tuple[str, str]]:
    init(ws, brain)
    with served(brain):
        direct(brain, queries[:20])  # warm
        sock_lat = direct(brain, queries)
        start, mcp_lat = asyncio.run(through_mcp(brain, queries))
        chunks = node_count(brain)
    return [
        (f"{name} ({chunks}): memory_search via MCP (SDK client, stdio)", pct(mcp_lat)),
        (f"{name}: the same query on the daemon's socket", pct(sock_lat)),
        (f"{name}: spawn ocb mcp -> first search answered", f"{start * 1000:.0f} ms"),
    ]


def node_count(brain: Path) -> str:
    sock = connect(brain, timeout=60)
    assert sock is not None
    with sock:
        got = call(sock, "sql", {"statement": "SELECT count(*) AS n FROM nodes"})
    return f"{got[0]['n']:,} nodes"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1000, help="files of 10 sections each")
    ap.add_argument("--searches", type=int, default=200)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ocb-mcp-"))
    rows: list[tuple[str, str]] = []
    try:
        small = root / "example"
        shutil.copytree(REPO / "examples" / "workspace", small)
        qs = (EXAMPLE_QUESTIONS * (a.searches // len(EXAMPLE_QUESTIONS) + 1))[: a.searches]
        rows += measure("example workspace", small, root / "brain-example", qs)
        big = root / "big"
        big.mkdir()
        qs = [q["text"] for q in make_workspace(big, a.files, a.searches, seed=7)]
        rows += measure(f"{a.files * 10:,}-chunk workspace", big, root / "brain-big", qs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; {a.searches} searches each; "
          f"{time.strftime('%Y-%m-%d')}")  # fmt: skip
    print("\n| measure | p50 / p95 ms (or as stated) |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
