"""The ``ocb`` package: its exports load on first use, and importing it changes no
environment variable (the ``ocb`` command sets its BLAS default itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, os, sys
before = dict(os.environ)
import ocb
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "ocb")
changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
from ocb import Brain, Store
print(json.dumps([loaded, changed, Brain.__module__, Store.__module__, issubclass(Brain, Store)]))
"""


def test_importing_ocb_loads_nothing_else_and_sets_no_environment() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    loaded, changed, brain, store, sub = json.loads(out.stdout)
    assert (loaded, changed) == (["ocb"], [])
    assert (brain, store, sub) == ("ocb.brain", "ocb.store", True)
