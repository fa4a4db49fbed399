"""One setting's registry entry and the checks of a value against it.

``ocb.settings`` declares the sections; ``entries`` turns one section Struct into its
``Setting`` entries (type, default, bounds, choices, meaning), and ``Setting.check``
coerces and validates a value (a CLI string or a Python value) against one.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import msgspec
import msgspec.inspect as mi

from ocb_events.errors import InputError
from workspace_sync.secrets import parse_allow, parse_patterns

__all__ = ["Setting", "Value", "entries"]

Value = int | float | str | bool
"""A setting's value (what ``ConfigChanged`` records)."""


class Setting(msgspec.Struct, frozen=True, kw_only=True):
    """One setting: its key, type, default, bounds, choices and meaning."""

    key: str
    section: str
    name: str
    kind: type
    default: Value
    description: str
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    choices: tuple[str, ...] = ()
    noun: str = ""
    parse: str = ""
    """A parser the text must pass (``patterns`` or ``allow`` of the secrets scanner)."""
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    def check(self, value: object) -> Value:
        """``value`` (a CLI string or a Python value) coerced to this setting's type.

        Raises:
            InputError: the wrong kind of value, not a choice, or out of bounds.
        """
        out = _coerce(self, value)
        if self.choices and out not in self.choices:
            noun = self.noun or f"value for {self.key}"
            raise InputError(f"unknown {noun} {out!r}", f"use one of: {', '.join(self.choices)}")
        if isinstance(out, str):
            _check_text(self, out)
            _check_parse(self, out)
        elif not isinstance(out, bool):
            _check_range(self, out)
        return out

    def bounds(self) -> str:
        """The bounds in words (``"above 0 and at most 1"``), or ``""``."""
        parts = [
            f"{word} {bound:g}"
            for word, bound in (
                ("above", self.gt),
                ("at least", self.ge),
                ("below", self.lt),
                ("at most", self.le),
            )
            if bound is not None
        ]
        return " and ".join(parts)

    def rules(self) -> str:
        """Type, bounds or choices, and default in words:
        ``"number, above 0 and at most 1; default 0.3"``."""
        rules = [self.about()["type"], self.bounds()]
        if self.choices:
            rules.append("one of " + ", ".join(self.choices))
        return ", ".join(r for r in rules if r) + f"; default {json.dumps(self.default)}"

    def about(self) -> dict[str, Any]:
        """A JSON-schema-like description: type, default, bounds, choices, meaning."""
        names = {int: "integer", float: "number", str: "string", bool: "boolean"}
        out: dict[str, Any] = {"type": names[self.kind], "default": self.default}
        for name, bound in (
            ("exclusiveMinimum", self.gt),
            ("minimum", self.ge),
            ("exclusiveMaximum", self.lt),
            ("maximum", self.le),
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("pattern", self.pattern),
        ):
            if bound is not None:
                out[name] = bound
        if self.choices:
            out["enum"] = list(self.choices)
        out["description"] = self.description
        return out


_KINDS: dict[type, type] = {
    mi.IntType: int,
    mi.FloatType: float,
    mi.StrType: str,
    mi.BoolType: bool,
    mi.LiteralType: str,
}


def _entry(section: str, field: mi.Field, hint: Any) -> Setting:
    key = f"{section}.{field.name}"
    t, description, extra = field.type, "", {}
    if isinstance(t, mi.Metadata):
        description = str((t.extra_json_schema or {}).get("description", ""))
        extra, t = t.extra or {}, t.type
    kind = _KINDS.get(type(t))
    if kind is None or field.default is msgspec.NODEFAULT:
        raise TypeError(f"setting {key} must be an int, float, str, bool or Literal with a default")
    got: dict[str, Any] = {}
    if isinstance(t, mi.LiteralType):  # in the declared order (msgspec sorts them)
        literal = get_args(hint)[0] if get_origin(hint) is Annotated else hint
        got["choices"] = tuple(str(v) for v in get_args(literal))
    elif isinstance(t, (mi.IntType, mi.FloatType)):
        got.update(gt=t.gt, ge=t.ge, lt=t.lt, le=t.le)
    elif isinstance(t, mi.StrType):
        got.update(min_length=t.min_length, max_length=t.max_length, pattern=t.pattern)
    return Setting(
        key=key,
        section=section,
        name=field.name,
        kind=kind,
        default=field.default,
        description=description,
        noun=str(extra.get("noun", "")),
        parse=str(extra.get("parse", "")),
        **got,
    )


@functools.cache
def entries(section: str, cls: type[msgspec.Struct]) -> dict[str, Setting]:
    """The settings of one section (built on first use: a command reads a section or
    two, and building them all costs a cold start about 15 ms)."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    hints = get_type_hints(cls, include_extras=True)
    entries = (_entry(section, field, hints[field.name]) for field in info.fields)
    return {e.key: e for e in entries}


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def _coerce(s: Setting, value: object) -> Value:
    if s.kind is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise InputError(f"{s.key} must be text, got {value!r}", f"give text, e.g. {s.default!r}")
    if s.kind is bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in _TRUE + _FALSE:
            return word in _TRUE
        raise InputError(f"{s.key} must be true or false, got {value!r}", "give true or false")
    if not isinstance(value, bool):
        number = _number(s.kind, value)
        if number is not None:
            return number
    raise InputError(
        f"{s.key} must be a finite {s.kind.__name__}, got {value!r}",
        f"give a finite {s.kind.__name__}, e.g. {s.default} (the default)",
    )


def _number(kind: type, value: object) -> int | float | None:
    try:
        if kind is int:
            if isinstance(value, float):
                return int(value) if value.is_integer() else None
            return int(value)  # type: ignore[call-overload,no-any-return]
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _check_range(s: Setting, value: float) -> None:
    ok = (
        (s.gt is None or value > s.gt)
        and (s.ge is None or value >= s.ge)
        and (s.lt is None or value < s.lt)
        and (s.le is None or value <= s.le)
    )
    if not ok:
        words = s.bounds()
        raise InputError(
            f"{s.key} must be {words}, got {value:g}",
            f"give a value {words}, e.g. {s.default:g} (the default)",
        )


def _check_text(s: Setting, value: str) -> None:
    short = s.min_length is not None and len(value) < s.min_length
    long = s.max_length is not None and len(value) > s.max_length
    if short or long:
        words = " and ".join(
            f"{word} {n}"
            for word, n in (("at least", s.min_length), ("at most", s.max_length))
            if n is not None
        )
        raise InputError(
            f"{s.key} must be {words} characters long, got {len(value)}",
            f"give {words} characters, e.g. {s.default!r} (the default)",
        )
    if s.pattern is not None and re.search(s.pattern, value) is None:
        raise InputError(
            f"{s.key} must match {s.pattern!r}, got {value!r}",
            f"give a value like {s.default!r} (the default)",
        )


_PARSERS = {"patterns": parse_patterns, "allow": parse_allow}


def _check_parse(s: Setting, value: str) -> None:
    if not s.parse:
        return
    try:
        _PARSERS[s.parse](value)
    except ValueError as exc:
        raise InputError(
            f"{s.key}: {exc}",
            "separate entries with spaces and write a space inside a regex as \\s",
        ) from None
