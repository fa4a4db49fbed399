"""Rendering ``ocb log migrate`` (``ocb.log_migrate.Migration``) as text and JSON.

JSON: ``{"records": int, "chain": hex, "log": url-or-dir, "blobs": int}`` (the URL
never carries a password)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ocb.log_migrate import Migration


def migration_text(m: Migration) -> str:
    return (
        f"copied {m.records} records and {m.blobs} blobs to {m.log}; "
        f"both copies end with chain {m.chain[:16]}"
    )


def migration_json(m: Migration) -> dict[str, Any]:
    return {"records": m.records, "chain": m.chain, "log": m.log, "blobs": m.blobs}
