"""CLI commands comparing points in the brain's history: diff, what-if (registered on
``ocb.cli.app``)."""

from __future__ import annotations
