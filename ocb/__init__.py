"""OpenClawBrain: the brain package (API, commands, CLI).

The library is the product; the ``ocb`` CLI is a thin layer over ``ocb.api``.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
