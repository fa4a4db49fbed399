"""How JSON is written: result structs become builtins with msgspec, and builtins
become one compact line."""

from __future__ import annotations

import json
from typing import Any

import msgspec


def dumps(obj: Any) -> str:
    """Compact, key-stable JSON (UTF-8 kept readable)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _float(x: Any) -> Any:
    if isinstance(x, float):  # a numpy float64 computed into a result
        return float(x)
    raise TypeError(f"cannot render a {type(x).__name__} as JSON")


def _lists(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return [_lists(x) for x in v]
    if isinstance(v, dict):
        return {k: _lists(x) for k, x in v.items()}
    return v


def plain(obj: Any) -> Any:
    """A struct (or a list of them) as dicts, lists and scalars, fields in their order
    (tuples become lists, as JSON has them)."""
    return _lists(msgspec.to_builtins(obj, enc_hook=_float))


def fields(obj: msgspec.Struct) -> dict[str, Any]:
    """One struct as a dict of its fields (nested structs as dicts too)."""
    out: dict[str, Any] = plain(obj)
    return out
