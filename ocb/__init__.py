"""OpenClawBrain: the brain package (``Brain``, its ``Store``, the commands, the CLI).

The library is the product; the ``ocb`` CLI is a thin layer over ``ocb.brain``::

    from ocb import Brain

    brain, report = Brain.init("/tmp/brain", "examples/workspace")

The names below are imported on first use, so ``import ocb`` (and every ``ocb``
command) loads only the modules it needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.brain import Brain
    from ocb.checks.repair import BrainRepair
    from ocb.checks.rewrite import BrainRewrite
    from ocb.checks.verify import Head, Verification
    from ocb.graph.file_text import FileAt
    from ocb.graph.retract import RetractReport
    from ocb.graph.route import TrainReport
    from ocb.graph.teach import TeachReport
    from ocb.graph.warm import WarmReport
    from ocb.log_migrate import Migration
    from ocb.memory.compact import CompactReport
    from ocb.memory.kg import KgHistory, KgSetReport, KgView
    from ocb.memory.recall import RecallItem
    from ocb.memory.recall_service import RecallAnswer
    from ocb.memory.reflect import ReflectReport
    from ocb.memory.retain import RetainReport
    from ocb.memory.unretain import FactRetraction
    from ocb.reports import Answer, Cited, Hit, InjectReport, LearnReport, ReembedReport, SyncReport
    from ocb.shared_log import Location
    from ocb.store import Store
    from ocb.upkeep.blobs import BlobReport
    from ocb.upkeep.forget import ForgetReport
    from ocb.upkeep.health import Health
    from ocb.upkeep.maintain import AnchorReport, MaintenanceReport
    from ocb.whatif import DiffReport, WhatIfReport
    from ocb_events.errors import OcbError
    from ocb_events.schema import QueryTraced, Record
    from replay.audit import EdgeAudit, NodeAudit
    from replay.parquet import ParquetExport
    from replay.report import HistoryReport
    from replay.store_meta import QueryResult
    from replay.verify import Check

__version__ = "0.1.0"

_HOME = {
    "AnchorReport": "ocb.upkeep.maintain",
    "Answer": "ocb.reports",
    "BlobReport": "ocb.upkeep.blobs",
    "Brain": "ocb.brain",
    "BrainRepair": "ocb.checks.repair",
    "BrainRewrite": "ocb.checks.rewrite",
    "Check": "replay.verify",
    "Cited": "ocb.reports",
    "CompactReport": "ocb.memory.compact",
    "DiffReport": "ocb.whatif",
    "EdgeAudit": "replay.audit",
    "FactRetraction": "ocb.memory.unretain",
    "FileAt": "ocb.graph.file_text",
    "ForgetReport": "ocb.upkeep.forget",
    "Head": "ocb.checks.verify",
    "Health": "ocb.upkeep.health",
    "HistoryReport": "replay.report",
    "Hit": "ocb.reports",
    "InjectReport": "ocb.reports",
    "KgHistory": "ocb.memory.kg",
    "KgSetReport": "ocb.memory.kg",
    "KgView": "ocb.memory.kg",
    "LearnReport": "ocb.reports",
    "Location": "ocb.shared_log",
    "MaintenanceReport": "ocb.upkeep.maintain",
    "Migration": "ocb.log_migrate",
    "NodeAudit": "replay.audit",
    "OcbError": "ocb_events.errors",
    "ParquetExport": "replay.parquet",
    "QueryResult": "replay.store_meta",
    "QueryTraced": "ocb_events.schema",
    "RecallAnswer": "ocb.memory.recall_service",
    "RecallItem": "ocb.memory.recall",
    "Record": "ocb_events.schema",
    "ReembedReport": "ocb.reports",
    "ReflectReport": "ocb.memory.reflect",
    "RetainReport": "ocb.memory.retain",
    "RetractReport": "ocb.graph.retract",
    "Store": "ocb.store",
    "SyncReport": "ocb.reports",
    "TeachReport": "ocb.graph.teach",
    "TrainReport": "ocb.graph.route",
    "Verification": "ocb.checks.verify",
    "WarmReport": "ocb.graph.warm",
    "WhatIfReport": "ocb.whatif",
}
"""Where each exported name is defined (imported on first use)."""

__all__ = [
    "AnchorReport",
    "Answer",
    "BlobReport",
    "Brain",
    "BrainRepair",
    "BrainRewrite",
    "Check",
    "Cited",
    "CompactReport",
    "DiffReport",
    "EdgeAudit",
    "FactRetraction",
    "FileAt",
    "ForgetReport",
    "Head",
    "Health",
    "HistoryReport",
    "Hit",
    "InjectReport",
    "KgHistory",
    "KgSetReport",
    "KgView",
    "LearnReport",
    "Location",
    "MaintenanceReport",
    "Migration",
    "NodeAudit",
    "OcbError",
    "ParquetExport",
    "QueryResult",
    "QueryTraced",
    "RecallAnswer",
    "RecallItem",
    "Record",
    "ReembedReport",
    "ReflectReport",
    "RetainReport",
    "RetractReport",
    "Store",
    "SyncReport",
    "TeachReport",
    "TrainReport",
    "Verification",
    "WarmReport",
    "WhatIfReport",
    "__version__",
]


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'ocb' has no attribute {name!r}")
    value: object = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
