"""The CLI's names for the library's parameters, and the rendering of an error in them.

The library names its parameters in an ``InputError`` (``\\`top\\` must be at least 1``,
``pass \\`top=5\\```) and lists them in its ``params``; the CLI prints each as its flag
(``--top must be at least 1``, ``pass --top 5``). A parameter is rendered only when the
error lists it, so a backquoted CLI example in a hint is left as it is.
"""

from __future__ import annotations

import re

__all__ = ["FLAGS", "flag_of", "in_flags", "rendered"]

FLAGS: dict[str, str] = {
    "all_fired": "--all",
    "as_of": "--as-of",
    "depth": "--associative-depth",
    "end": "--to",
    "k": "--k",
    "max_chars": "--max-chars",
    "min_examples": "--min-examples",
    "node_id": "--node",
    "node_type": "--type",
    "queries": "--queries",
    "repair": "--repair",
    "since": "--since",
    "limit": "--limit",
    "start": "--from",
    "targets": "--target",
    "text": "--text",
    "threshold": "--threshold",
    "top": "--top",
    "trace_id": "--trace",
    "window": "--window",
}
"""The flag of each library parameter, in every command unless ``_IN_COMMAND`` says
otherwise."""

_IN_COMMAND: dict[tuple[str, str], str] = {
    ("anchor", "node_ids"): "--node",
    ("anchor", "path"): "--file",
    ("forget", "path"): "--file",
    ("retain", "kind"): "--type",
    ("warm", "paths"): "--sessions",
}
"""(command, parameter) -> its flag, where a command names a parameter otherwise."""


def flag_of(param: str, command: str = "") -> str:
    """The flag that passes ``param`` to ``command`` (``--top``); a parameter without
    one is written as a flag of its name (``--max-hops``)."""
    return _IN_COMMAND.get((command, param)) or FLAGS.get(param) or "--" + param.replace("_", "-")


def in_flags(text: str, params: tuple[str, ...], command: str = "") -> str:
    """``text`` with each of ``params`` written as its flag: ```top=5``` becomes
    ``--top 5`` and ```top``` becomes ``--top``."""
    for param in params:
        flag = flag_of(param, command)
        text = re.sub(rf"`{re.escape(param)}=([^`]*)`", flag + r" \1", text)
        text = text.replace(f"`{param}`", flag)
    return text


def rendered(exc: object, message: str, hint: str, command: str = "") -> tuple[str, str]:
    """The message and hint of ``exc`` as ``command`` prints them: the parameters an
    ``InputError`` lists, as its flags."""
    params: tuple[str, ...] = getattr(exc, "params", ())
    if not params:
        return message, hint
    return in_flags(message, params, command), in_flags(hint, params, command)
