"""From a Markdown workspace to file events: scanning, chunking, diffing, and redacting
secrets before any text is recorded; and the one safe way to write a workspace file."""

from workspace_sync.diff import PreviousChunk, PreviousFile, diff_file, diff_workspace, text_hash
from workspace_sync.facts import (
    PreviousFacts,
    Problem,
    assign_ids,
    diff_facts,
    estimate_salience,
    parse_facts,
)
from workspace_sync.markdown import MAX_CHARS, TARGET_CHARS, Piece, chunk_text, split_lines
from workspace_sync.reads import Excerpt, read_lines
from workspace_sync.retain import format_bullet, insert_retained
from workspace_sync.scan import FileText, Skipped, read_text, scan_paths, scan_workspace
from workspace_sync.secrets import Finding, Redacted, Scanner, redact_files
from workspace_sync.writes import sweep_temp_files, writable_target, write_workspace_file

__all__ = [
    "Excerpt",
    "FileText",
    "Finding",
    "MAX_CHARS",
    "Piece",
    "PreviousChunk",
    "PreviousFacts",
    "PreviousFile",
    "Problem",
    "Redacted",
    "Scanner",
    "Skipped",
    "TARGET_CHARS",
    "assign_ids",
    "chunk_text",
    "diff_facts",
    "diff_file",
    "diff_workspace",
    "estimate_salience",
    "format_bullet",
    "insert_retained",
    "parse_facts",
    "read_lines",
    "read_text",
    "redact_files",
    "scan_paths",
    "scan_workspace",
    "split_lines",
    "sweep_temp_files",
    "text_hash",
    "writable_target",
    "write_workspace_file",
]
