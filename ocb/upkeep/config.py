"""Recording a setting (``ocb config KEY VALUE``): settings are events too, so time
travel reads the settings that were in force."""

from __future__ import annotations

from ocb.settings import actor_of, check_key
from ocb.store import Store
from ocb_events.schema import ConfigChanged, Record


def set_config(store: Store, key: str, value: object, *, actor: str = "cli") -> Record | None:
    """Record a setting, validated completely first (nothing is recorded for an
    unknown key or a bad value), as ``actor``; None when it already has that value.

    Raises:
        InputError: an unknown key (naming the close matches) or a bad value.
    """
    coerced = check_key(key, value)

    def decide(_seq: int) -> list[ConfigChanged]:
        if store.state("config").values.get(key) == coerced:
            return []
        return [ConfigChanged(key=key, value=coerced)]

    recs = store.transact(actor_of(actor), decide)
    return recs[0] if recs else None
