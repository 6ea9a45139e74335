"""Scanning a verl job's output directory: every log it writes, streamed, in parallel.

``scan_paths(paths, diagnoser)`` is the entry point the CLI and the HTTP server call. The names below
load on first use, so a worker process that only streams bytes never imports the report models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb.scan.report import Finding, Incident, JobReport, ScanReport, SkippedFile
    from kb.scan.runner import scan_paths

__all__ = ["Finding", "Incident", "JobReport", "ScanReport", "SkippedFile", "scan_paths"]


def __getattr__(name: str) -> Any:
    if name == "scan_paths":
        from kb.scan.runner import scan_paths

        return scan_paths
    if name in __all__:
        from kb.scan import report

        return getattr(report, name)
    raise AttributeError(f"module 'kb.scan' has no attribute {name!r}")
