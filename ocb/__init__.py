"""OpenClawBrain: the brain package (API, commands, CLI).

The library is the product; the ``ocb`` CLI is a thin layer over ``ocb.brain``.
"""

import os

# Vectors are searched with one matrix-vector product per query: a thread pool only
# adds contention (10-20x slower on a busy 2-core machine). Set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"

__all__ = ["__version__"]
