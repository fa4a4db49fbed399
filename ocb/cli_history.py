"""CLI commands over the brain's history: sql, report, audit (registered on ``ocb.cli.app``)."""

from __future__ import annotations
