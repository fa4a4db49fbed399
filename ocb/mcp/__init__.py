"""``ocb mcp``: a stdio MCP server over a brain, for agent hosts (Claude Desktop, Cursor,
OpenClaw ...). It is a thin layer: each tool is one call of the daemon's protocol, sent
to the daemon serving the brain (started when none runs) or, with ``--no-daemon``, to the
same methods run in this process (``backend``); ``tools`` shapes the answers for a model
and ``server`` registers them with the official SDK.

NOTE: the ``mcp`` package is an optional extra (``pip install -e '.[mcp]'`` in a
checkout; ``ocb mcp`` prints the command for this install): only ``tools`` and
``server`` import it, and only ``ocb mcp`` imports them. Keep this ``__init__`` free
of imports.
"""
