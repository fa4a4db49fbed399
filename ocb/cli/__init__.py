"""The ``ocb`` command line: typer groups over ``ocb.brain.Brain``."""

from ocb.cli.app import app, main

__all__ = ["app", "main"]
