"""The live brain: a daemon that holds a brain open as its single writer, serves
JSON-RPC 2.0 over a Unix socket (or stdio), and records workspace changes as the
watcher sees them; and the thin client that hands ``ocb`` commands to it.

NOTE: ``ocb.daemon.protocol`` and ``ocb.daemon.client`` are the client path of every
``ocb`` command: they import the standard library and msgspec only (no numpy, no
typer). Keep this package's ``__init__`` free of imports.
"""
