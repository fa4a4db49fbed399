"""From a Markdown workspace to file events: scanning, chunking and diffing."""

from workspace_sync.diff import PreviousFile, diff_file, diff_workspace, text_hash
from workspace_sync.markdown import TARGET_CHARS, Piece, chunk_text, split_lines
from workspace_sync.scan import FileText, Skipped, scan_workspace

__all__ = [
    "FileText",
    "Piece",
    "PreviousFile",
    "Skipped",
    "TARGET_CHARS",
    "chunk_text",
    "diff_file",
    "diff_workspace",
    "scan_workspace",
    "split_lines",
    "text_hash",
]
