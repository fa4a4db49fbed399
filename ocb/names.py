"""Names that name nothing: an input error that suggests the close matches."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ocb_events.errors import InputError


def unknown(kind: str, name: str, known: Sequence[str], hint: str, where: str = "") -> InputError:
    """An InputError for a name that names nothing (``where`` ends its message),
    suggesting close matches, found with case ignored and given in their spelling."""
    spelled: dict[str, str] = {}
    for k in known:
        spelled.setdefault(k.lower(), k)
    close = difflib.get_close_matches(name.lower(), list(spelled), n=3, cutoff=0.6)
    if close:
        hint = "did you mean " + ", ".join(spelled[c] for c in close) + "?"
    return InputError(f"unknown {kind} {name!r}{where}", hint)
