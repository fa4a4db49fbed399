"""The event vocabulary and the append-only log of a brain."""

from ocb_events.blobs import BlobStore
from ocb_events.clock import Clock, TickClock, system_clock
from ocb_events.codec import decode_record, encode_record, record_to_json, register_upcaster
from ocb_events.errors import (
    AnalyticsError,
    BlobMissing,
    BlobWriteFailed,
    BrainError,
    BrainExists,
    BrainLocked,
    BrainNotFound,
    EmbedderMismatch,
    EmbedderUnavailable,
    InputError,
    LogConflict,
    LogCorrupt,
    LogError,
    LogTruncated,
    LogUnavailable,
    LogWriteFailed,
    OcbError,
    UnknownEventType,
    WorkspaceError,
)
from ocb_events.log import SegmentLog, verify_log
from ocb_events.memory import MemoryLog
from ocb_events.protocol import EventLog
from ocb_events.schema import AnyEvent, Event, Record
from ocb_events.segments import Recovery

__all__ = [
    "AnalyticsError",
    "AnyEvent",
    "BlobMissing",
    "BlobStore",
    "BlobWriteFailed",
    "BrainError",
    "BrainExists",
    "BrainLocked",
    "BrainNotFound",
    "Clock",
    "EmbedderMismatch",
    "EmbedderUnavailable",
    "Event",
    "EventLog",
    "InputError",
    "LogConflict",
    "LogCorrupt",
    "LogError",
    "LogTruncated",
    "LogUnavailable",
    "LogWriteFailed",
    "MemoryLog",
    "OcbError",
    "Record",
    "Recovery",
    "SegmentLog",
    "TickClock",
    "UnknownEventType",
    "WorkspaceError",
    "decode_record",
    "encode_record",
    "record_to_json",
    "register_upcaster",
    "system_clock",
    "verify_log",
]
