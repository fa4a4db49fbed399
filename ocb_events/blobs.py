"""The content-addressed blob store of a brain (embedding matrices).

A blob is named by the sha256 of its bytes and never changes; events refer to blobs
by that name, so replay never needs the code that produced them. Writes go to a temp
file, are fsynced, then renamed into place.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ocb_events.durable import private_dir, replace_file
from ocb_events.errors import BlobMissing, BlobWriteFailed


class BlobStore:
    """Immutable blobs under ``directory/<2 hex>/<sha256>``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def path(self, digest: str) -> Path:
        return self.directory / digest[:2] / digest

    def put(self, data: bytes) -> str:
        """Store ``data`` (once) and return its sha256 hex name.

        Raises:
            BlobWriteFailed: the disk refused the write (no temp file is left).
        """
        digest = hashlib.sha256(data).hexdigest()
        path = self.path(digest)
        if path.exists():
            return digest
        try:
            private_dir(path.parent)
            replace_file(path, [data], path.with_name(digest + ".tmp"))
        except OSError as exc:
            raise BlobWriteFailed(path, exc.strerror or str(exc)) from exc
        return digest

    def get(self, digest: str, *, verify: bool = False) -> bytes:
        """The bytes of a blob.

        Raises:
            BlobMissing: the blob is absent, or ``verify`` and its hash does not match.
        """
        try:
            data = self.path(digest).read_bytes()
        except OSError:
            raise BlobMissing(digest, "is missing") from None
        if verify and hashlib.sha256(data).hexdigest() != digest:
            raise BlobMissing(digest, "does not match its hash")
        return data

    def exists(self, digest: str) -> bool:
        return self.path(digest).exists()
