"""Scanning a verl job's output directory: every log it writes, streamed, in parallel.

``scan_paths(paths, diagnoser)`` is the entry point the CLI and the HTTP server call.
"""

from kb.scan.report import Finding, Incident, JobReport, ScanReport, SkippedFile
from kb.scan.runner import scan_paths

__all__ = ["Finding", "Incident", "JobReport", "ScanReport", "SkippedFile", "scan_paths"]
