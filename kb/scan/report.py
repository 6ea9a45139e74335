"""The scan report: one pydantic model for every surface (CLI text/JSON/Markdown/SARIF, HTTP, TUI).

Each incident carries the engine's own :class:`kb.result.Result` for its excerpt; metric findings carry
the engine's :class:`kb.result.Match` with the step range as evidence; override findings carry the
:class:`kb.overrides.OverrideVerdict` of ``check-overrides``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field

from kb.overrides import OverrideReport, OverrideVerdict
from kb.result import Match, Result

Role = Literal["first-failure", "error", "cascade", "notice"]
Severity = Literal["critical", "error", "warning", "note"]
FindingKind = Literal["failure", "error", "cascade", "metric", "override", "warning"]

SEVERITY_RANK: dict[str, int] = {"critical": 0, "error": 1, "warning": 2, "note": 3}


def displayable(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (Python keeps them as surrogate escapes, which JSON
    cannot carry) become ``\\xNN``, as ``ls -b`` shows them."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


#: A path in a report: always valid Unicode, whatever bytes the file system gave.
PathText = Annotated[str, AfterValidator(displayable)]


class Location(BaseModel):
    file: PathText = Field(description="path relative to the job root (the job root itself for a single file)")
    line: int = Field(description="1-based line of the incident's first anchor line")
    rank: int | None = None


class Incident(BaseModel):
    """One error block, or the same one seen many times across ranks and files."""

    id: str
    role: Role
    kind: Literal["error", "cascade", "notice"]
    title: str = Field(description="the key line: the innermost exception, or the line that fired")
    signature: str = Field(description="what grouped the occurrences: exception type and masked message")
    caused_by: str | None = Field(default=None, description="for a cascade: the id of the first failure")
    count: int
    ranks: list[int] = Field(default_factory=list)
    files: dict[PathText, int] = Field(default_factory=dict, description="file -> occurrences")
    first: Location
    locations: list[Location] = Field(default_factory=list)
    time: str | None = Field(default=None, description="earliest timestamp seen with it (MM-DD HH:MM:SS)")
    excerpt: list[str] = Field(default_factory=list, description="the lines of the first occurrence")
    excerpt_start: int = Field(default=1, description="file line of the excerpt's first line")
    diagnosis: Result


class JobFacts(BaseModel):
    """Environment facts gathered once per job and used for every diagnosis in it."""

    versions: dict[str, str] = Field(default_factory=dict)
    gpus: list[str] = Field(default_factory=list)
    platform: str | None = None
    env: list[str] = Field(default_factory=list)
    overrides: dict[str, str] = Field(default_factory=dict)
    overrides_source: PathText | None = None
    checkpoint_steps: list[int] = Field(default_factory=list)
    latest_checkpoint: int | None = None
    metrics_seen: list[str] = Field(default_factory=list)
    steps: tuple[int, int] | None = Field(default=None, description="first and last step with metrics")


class SkippedFile(BaseModel):
    path: PathText
    reason: str
    partial: bool = Field(default=False, description="true when part of the file was scanned before the problem")


class FileStat(BaseModel):
    path: PathText
    kind: str
    compression: str | None = None
    bytes: int
    lines: int


class Finding(BaseModel):
    """One problem, worst first in ``ScanReport.findings``."""

    id: str
    job: PathText
    kind: FindingKind
    severity: Severity
    title: str
    entry_id: str | None = Field(default=None, description="the corpus entry that explains it, when one matched")
    confidence: float | None = None
    verdict: Literal["match", "possible"] | None = None
    caused_by: str | None = None
    incident: Incident | None = None
    metric: Match | None = None
    override: OverrideVerdict | None = None


class JobReport(BaseModel):
    root: PathText
    facts: JobFacts
    incidents: list[Incident] = Field(default_factory=list)
    overrides: OverrideReport | None = None
    files: list[FileStat] = Field(default_factory=list)
    ignored: dict[str, int] = Field(default_factory=dict)


class ScanStats(BaseModel):
    files: int = 0
    bytes: int = Field(default=0, description="bytes read from disk")
    bytes_scanned: int = Field(default=0, description="bytes given to the pattern engine (decompressed)")
    lines: int = 0
    seconds: float = 0.0
    engine: str = "hyperscan"
    executor: str = "local"
    workers: int = 1


class ScanReport(BaseModel):
    kb_version: str
    paths: list[PathText]
    findings: list[Finding] = Field(default_factory=list)
    jobs: list[JobReport] = Field(default_factory=list)
    skipped: list[SkippedFile] = Field(default_factory=list)
    stats: ScanStats = Field(default_factory=ScanStats)
    notes: list[str] = Field(default_factory=list)


def nothing_read(report: ScanReport) -> str | None:
    """Why a scan that read no log at all and found nothing is no answer ("no problems" would be wrong), or
    None when it read something or found something."""
    if report.stats.files or report.findings:
        return None
    where = ", ".join(report.paths)
    return f"no logs found in {where}: nothing to scan (a job writes *.log, *.out/err, Ray session logs)"
