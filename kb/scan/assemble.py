"""From the scanned files' results to the report: each job's facts, incidents, metric findings and
override checks, with the diagnoser. Imported once the bytes are scanned, so streaming never waits
for the report models."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kb.scan.files import Job, JobFile
from kb.scan.incidents import build_incidents, merge_groups
from kb.scan.job import check_job_overrides, gather_facts, merge_series
from kb.scan.report import (
    SEVERITY_RANK,
    FileStat,
    Finding,
    Incident,
    JobReport,
    ScanReport,
    SkippedFile,
)
from kb.scan.segments import MAX_LOCATIONS, SegmentResult, merge_segments

if TYPE_CHECKING:
    from kb.engine import Diagnoser

_DRIVER_KINDS = ("driver", "hydra_log", "wandb_log")
_OVERRIDE_ERRORS = ("unknown", "needs_plus", "remove_plus", "malformed", "bad_value")
_KIND_ORDER = {"failure": 0, "error": 1, "override": 2, "metric": 3, "warning": 4, "cascade": 5}


def build_report(
    paths: list[Path],
    jobs: list[Job],
    files: list[tuple[int, JobFile]],
    results: dict[int, list[SegmentResult]],
    diagnoser: Diagnoser,
) -> ScanReport:
    """The report of one scan: ``files`` are (job index, file), ``results`` the segments of each file."""
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
        if not job.log_files:
            ignored = ", ".join(f"{n} {why}" for why, n in sorted(job.ignored.items()))
            report.notes.append(f"no logs found in {job.root}" + (f" (only {ignored})" if ignored else ""))
        label = f"J{ji + 1}." if len(jobs) > 1 else ""
        job_report, findings = assemble_job(job, per_job.get(ji, []), diagnoser, label)
        report.jobs.append(job_report)
        report.findings += findings
    report.findings.sort(key=lambda f: (SEVERITY_RANK[f.severity], _KIND_ORDER[f.kind], -(f.confidence or 0.0)))
    for i, f in enumerate(report.findings, 1):
        f.id = f"F{i}"
    report.stats.files = len(files)
    report.stats.bytes_scanned = sum(r.bytes_read for rs in results.values() for r in rs)
    return report


def assemble_job(
    job: Job, scanned: list[tuple[JobFile, SegmentResult]], diagnoser: Diagnoser, label: str
) -> tuple[JobReport, list[Finding]]:
    scanned = sorted(scanned, key=lambda fr: (fr[0].kind not in _DRIVER_KINDS, fr[0].rel))
    env_lines = [ln for _, r in scanned for ln in r.env_lines]
    signals, facts, override_texts = gather_facts(job, env_lines)
    drafts = merge_groups([(jf.rel, jf.kind, r.groups) for jf, r in scanned if r.skipped is None])
    incidents = merge_known_notices(build_incidents(drafts, diagnoser, signals, label))
    series, origin = merge_series([(jf.rel, r.metrics) for jf, r in scanned])
    metric_matches = diagnoser.diagnose_metrics(signals, series)
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


def merge_known_notices(incidents: list[Incident]) -> list[Incident]:
    """A known warning printed in several forms (a logger line and a ``FutureWarning`` about the same
    thing, say) is one incident: the first keeps the others' counts, ranks, files and locations."""
    kept: list[Incident] = []
    by_entry: dict[str, Incident] = {}
    for inc in incidents:
        best = inc.diagnosis.matches[0] if inc.diagnosis.matches else None
        if inc.role != "notice" or best is None:
            kept.append(inc)
            continue
        first = by_entry.get(best.id)
        if first is None:
            by_entry[best.id] = inc
            kept.append(inc)
            continue
        first.count += inc.count
        first.ranks = sorted(set(first.ranks) | set(inc.ranks))
        for name, n in inc.files.items():
            first.files[name] = first.files.get(name, 0) + n
        first.locations = (first.locations + inc.locations)[:MAX_LOCATIONS]
    return kept
