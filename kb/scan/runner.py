"""``scan_paths``: discover the jobs' files, scan them in parallel, and turn the results into a report."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kb.scan.database import ScanDatabase
from kb.scan.executors import LocalExecutor, OnDone
from kb.scan.files import Job, JobFile, discover
from kb.scan.filescan import BlockGroup, SegmentResult
from kb.scan.incidents import build_incidents, merge_groups
from kb.scan.job import check_job_overrides, evaluate_metrics, gather_facts, merge_series, watched_metrics
from kb.scan.report import (
    SEVERITY_RANK,
    FileStat,
    Finding,
    Incident,
    JobReport,
    ScanReport,
    SkippedFile,
)
from kb.scan.worker import Task, plan

if TYPE_CHECKING:
    from kb.engine import Diagnoser

_DRIVER_KINDS = ("driver", "hydra_log", "wandb_log")
_OVERRIDE_ERRORS = ("unknown", "needs_plus", "remove_plus", "malformed", "bad_value")
_KIND_ORDER = {"failure": 0, "error": 1, "override": 2, "metric": 3, "warning": 4, "cascade": 5}


class Executor(Protocol):
    """Runs scan tasks somewhere and calls ``on_done`` for each (in the calling thread)."""

    name: str

    @property
    def workers(self) -> int: ...

    def run(self, db: ScanDatabase, watched: frozenset[str], tasks: list[Task], on_done: OnDone, size: int) -> None: ...


_DB_CACHE: dict[str, ScanDatabase] = {}


def scan_database(diagnoser: Diagnoser) -> ScanDatabase:
    """The corpus's symptom regexes plus the scanner's markers, compiled once per corpus."""
    symptoms = list(diagnoser.rules.patterns.patterns)
    key = diagnoser.kb_version + str(len(symptoms))
    db = _DB_CACHE.get(key)
    if db is None or db.symptoms != symptoms:
        db = _DB_CACHE[key] = ScanDatabase.for_symptoms(symptoms)
    return db


def scan_paths(
    paths: list[Path], diagnoser: Diagnoser, *, workers: int | None = None, progress: bool = False
) -> ScanReport:
    """Scan job directories (or single log files): every path is one job. Files run in parallel across
    cores; ``report.findings`` is non-empty when problems were found; unreadable input is in
    ``report.skipped`` with the reason."""
    return run_scan(paths, diagnoser, LocalExecutor(workers), progress=progress)


def run_scan(paths: list[Path], diagnoser: Diagnoser, executor: Executor, *, progress: bool = False) -> ScanReport:
    started = time.perf_counter()
    db = scan_database(diagnoser)
    watched = watched_metrics(diagnoser)
    jobs = [discover(Path(p)) for p in paths]
    files: list[tuple[int, JobFile]] = [(ji, f) for ji, job in enumerate(jobs) for f in job.log_files]
    tasks: list[Task] = []
    for fi, (_, jf) in enumerate(files):
        tasks += plan(fi, str(jf.path), jf.compression, jf.size, jf.rank_hint)
    tasks.sort(key=lambda t: -((t.end or files[t.file_index][1].size) - t.start))
    total = sum(f.size for _, f in files)
    results: dict[int, list[SegmentResult]] = {}

    with _progress(progress, total) as advance:

        def on_done(task: Task, result: SegmentResult) -> None:
            results.setdefault(task.file_index, []).append(result)
            advance((task.end or files[task.file_index][1].size) - task.start)

        executor.run(db, watched, tasks, on_done, total)

    report = ScanReport(kb_version=diagnoser.kb_version, paths=[str(p) for p in paths])
    per_job: dict[int, list[tuple[JobFile, SegmentResult]]] = {}
    for fi, (ji, jf) in enumerate(files):
        merged = merge_segments(results.get(fi, []))
        per_job.setdefault(ji, []).append((jf, merged))
        report.stats.bytes += merged.bytes_read
        report.stats.lines += merged.lines
        if merged.skipped is not None:
            report.skipped.append(SkippedFile(path=str(jf.path), reason=merged.skipped))
        elif merged.partial is not None:
            report.skipped.append(SkippedFile(path=str(jf.path), reason=merged.partial, partial=True))
        elif merged.long_lines:
            report.notes.append(f"{jf.path}: " + "; ".join(merged.notes))
    for ji, job in enumerate(jobs):
        report.skipped += [
            SkippedFile(path=str(job.root / s.path) if s.path else str(job.root), reason=s.reason) for s in job.skipped
        ]
        label = f"J{ji + 1}." if len(jobs) > 1 else ""
        job_report, findings = assemble_job(job, per_job.get(ji, []), diagnoser, label)
        report.jobs.append(job_report)
        report.findings += findings
    report.findings.sort(key=lambda f: (SEVERITY_RANK[f.severity], _KIND_ORDER[f.kind], -(f.confidence or 0.0)))
    for i, f in enumerate(report.findings, 1):
        f.id = f"F{i}"
    report.stats.files = len(files)
    report.stats.bytes_scanned = sum(r.bytes_read for rs in results.values() for r in rs)
    report.stats.seconds = round(time.perf_counter() - started, 3)
    report.stats.engine = db.engine
    report.stats.executor = executor.name
    report.stats.workers = executor.workers
    return report


def merge_segments(segments: list[SegmentResult]) -> SegmentResult:
    """One file's result from its segments, with absolute line numbers."""
    segments = sorted(segments, key=lambda s: s.segment)
    if not segments:
        return SegmentResult(file_index=-1, segment=0, skipped="not scanned")
    out = segments[0]
    offset = out.lines
    for seg in segments[1:]:
        seg.shift(offset)
        offset += seg.lines
        out.lines += seg.lines
        out.bytes_read += seg.bytes_read
        out.long_lines += seg.long_lines
        out.notes += seg.notes
        out.partial = out.partial or seg.partial
        out.skipped = out.skipped or seg.skipped
        for sig, g in seg.groups.items():
            mine: BlockGroup | None = out.groups.get(sig)
            if mine is None:
                out.groups[sig] = g
            else:
                mine.absorb(g)
        for key, points in seg.metrics.items():
            out.metrics.setdefault(key, []).extend(points)
        out.env_lines += seg.env_lines[: max(0, 300 - len(out.env_lines))]
        if not out.metric_keys:
            out.metric_keys = seg.metric_keys
    return out


def assemble_job(
    job: Job, scanned: list[tuple[JobFile, SegmentResult]], diagnoser: Diagnoser, label: str
) -> tuple[JobReport, list[Finding]]:
    scanned = sorted(scanned, key=lambda fr: (fr[0].kind not in _DRIVER_KINDS, fr[0].rel))
    env_lines = [ln for _, r in scanned for ln in r.env_lines]
    signals, facts, override_texts = gather_facts(job, env_lines)
    drafts = merge_groups([(jf.rel, jf.kind, r.groups) for jf, r in scanned if r.skipped is None])
    incidents = build_incidents(drafts, diagnoser, signals, label)
    series, origin = merge_series([(jf.rel, r.metrics) for jf, r in scanned])
    metric_matches = evaluate_metrics(diagnoser, signals, series)
    override_report = check_job_overrides(override_texts, facts)
    facts.metrics_seen = next((r.metric_keys for _, r in scanned if r.metric_keys), [])[:300]
    steps = sorted({p.step for pts in series.values() for p in pts})
    facts.steps = (steps[0], steps[-1]) if steps else None
    root = str(job.root)
    job_report = JobReport(
        root=root,
        facts=facts,
        incidents=incidents,
        overrides=override_report,
        files=[
            FileStat(path=jf.rel, kind=jf.kind, compression=jf.compression, bytes=jf.size, lines=r.lines)
            for jf, r in scanned
        ],
        ignored=dict(job.ignored),
    )
    findings: list[Finding] = [_incident_finding(root, inc) for inc in incidents]
    for m in metric_matches:
        ev = next((e for e in m.evidence if e.kind == "metric"), None)
        metric = ev.pattern.split(" ")[0] if ev is not None and ev.pattern else None
        where = f" ({origin[metric]})" if metric in origin else ""
        findings.append(
            Finding(
                id="",
                job=root,
                kind="metric",
                severity="warning",
                title=f"{m.title}{where}",
                entry_id=m.id,
                confidence=m.confidence,
                verdict=m.verdict,
                metric=m,
            )
        )
    if override_report is not None:
        for v in override_report.verdicts:
            if not v.fails:
                continue
            findings.append(
                Finding(
                    id="",
                    job=root,
                    kind="override",
                    severity="error" if v.status in _OVERRIDE_ERRORS else "warning",
                    title=f"override {v.text}: {v.message}",
                    override=v,
                )
            )
    return job_report, findings


def _incident_finding(root: str, inc: Incident) -> Finding:
    best = inc.diagnosis.matches[0] if inc.diagnosis.matches else None
    kind = {"first-failure": "failure", "error": "error", "cascade": "cascade", "notice": "warning"}[inc.role]
    if inc.role == "first-failure":
        severity = "critical"
    elif inc.role == "error":
        severity = "error"
    elif inc.role == "notice" and best is not None and best.verdict == "match":
        severity = "warning"
    else:
        severity = "note"
    title = best.title if best is not None and best.verdict == "match" else inc.title
    return Finding(
        id="",
        job=root,
        kind=kind,  # type: ignore[arg-type]
        severity=severity,  # type: ignore[arg-type]
        title=title,
        entry_id=best.id if best is not None else None,
        confidence=best.confidence if best is not None else None,
        verdict=best.verdict if best is not None else None,
        caused_by=inc.caused_by,
        incident=inc,
    )


@contextmanager
def _progress(enabled: bool, total: int) -> Iterator[Callable[[int], None]]:
    if not enabled:
        yield lambda _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    with Progress(
        TextColumn("scanning"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("scan", total=total)
        yield lambda n: bar.advance(task, n)
