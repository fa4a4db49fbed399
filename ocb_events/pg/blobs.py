"""The blobs of a brain whose log is on PostgreSQL: kept in the log's ``blobs``
table, so every machine reads the vectors any machine stored, with a local copy of
each blob read or written (the brain's ``blobs`` directory) so a blob crosses the
network once."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ocb_events.blobs import BlobStore
from ocb_events.errors import BlobMissing, BlobWriteFailed, LogUnavailable
from ocb_events.pg.log import PostgresLog

__all__ = ["SharedBlobStore"]


class SharedBlobStore(BlobStore):
    """Blobs in the database, cached under ``directory`` (same API as ``BlobStore``).

    Raises (put):
        BlobWriteFailed: the database refused the blob (nothing was recorded).
    """

    def __init__(self, directory: Path, log: PostgresLog) -> None:
        super().__init__(directory)
        self.log = log

    def put(self, data: bytes) -> str:
        name = hashlib.sha256(data).hexdigest()
        try:
            self.log.put_blob(name, data)
        except LogUnavailable as exc:
            raise BlobWriteFailed(Path(self.log.url), exc.reason) from None
        if not super().exists(name):
            super().put(data)
        return name

    def get(self, digest: str, *, verify: bool = False) -> bytes:
        try:
            return super().get(digest, verify=verify)
        except BlobMissing:
            pass
        data = self._fetch(digest)
        if hashlib.sha256(data).hexdigest() != digest:
            raise BlobMissing(digest, "does not match its hash")
        super().put(data)
        return data

    def _fetch(self, digest: str) -> bytes:
        try:
            data = self.log.get_blob(digest)
        except LogUnavailable:
            raise BlobMissing(digest, "is not cached here and the log's server is down") from None
        if data is None:
            raise BlobMissing(digest, "is missing")
        return data

    def exists(self, digest: str) -> bool:
        if super().exists(digest):
            return True
        try:
            return self.log.get_blob(digest) is not None
        except LogUnavailable:
            return False
