"""The ``ocb`` script: a command goes to the daemon serving its brain when there is one
(``ocb.daemon.client``, which loads neither numpy nor typer), else it runs in-process
(``ocb.cli``)."""

from __future__ import annotations

import os
import sys

from ocb.daemon.client import forward, split_no_daemon

__all__ = ["main"]


def main() -> None:
    """Entry point of the ``ocb`` script."""
    argv, local = split_no_daemon(sys.argv[1:], os.environ)
    if local:  # a command that picks how to reach the brain (ocb mcp) reads it there
        os.environ["OCB_NO_DAEMON"] = "1"
    else:
        code = forward(argv, os.environ, os.getcwd())
        if code is not None:
            sys.exit(code)
    sys.argv[1:] = argv
    from ocb.cli.app import main as run  # in-process: the whole CLI

    run()


if __name__ == "__main__":
    main()
