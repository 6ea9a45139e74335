"""Rendering a ScanReport: terminal (rich, worst first), Markdown for an issue, SARIF 2.1.0."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape

from kb import __version__
from kb.render_text import terminal_safe_model
from kb.result import EnvSetting, RenderedOverride
from kb.scan.report import Finding, Incident, JobReport, ScanReport

_SEV_STYLE = {"critical": "bold red", "error": "red", "warning": "yellow", "note": "dim"}
_SARIF_LEVEL = {"critical": "error", "error": "error", "warning": "warning", "note": "note"}


def _where(inc: Incident) -> str:
    ranks = f" on rank{'s' if len(inc.ranks) > 1 else ''} {_ranges(inc.ranks)}" if inc.ranks else ""
    files = f" in {len(inc.files)} files" if len(inc.files) > 1 else ""
    times = f"{inc.count} times" if inc.count > 1 else "once"
    return f"{times}{ranks}{files}; first at {inc.first.file}:{inc.first.line}" + (f" ({inc.time})" if inc.time else "")


def _ranges(values: list[int]) -> str:
    out: list[str] = []
    start = prev = None
    for v in values:
        if start is None:
            start = prev = v
        elif prev is not None and v == prev + 1:
            prev = v
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = v
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)


def _facts_line(job: JobReport) -> str:
    f = job.facts
    parts = [f"{k} {v}" for k, v in f.versions.items()]
    if f.gpus:
        parts.append("/".join(f.gpus))
    if f.steps:
        parts.append(f"steps {f.steps[0]}-{f.steps[1]}")
    if f.overrides:
        parts.append(f"{len(f.overrides)} overrides from {f.overrides_source}")
    if f.latest_checkpoint is not None:
        parts.append(f"latest checkpoint step {f.latest_checkpoint}")
    return "; ".join(parts)


def render_terminal(report: ScanReport, out: Console | None = None) -> None:
    out = out or Console(highlight=False, soft_wrap=True)
    report = terminal_safe_model(report)  # file names and log lines are printed: no control sequences
    s = report.stats
    out.print(
        f"Scanned {s.files} files, {s.bytes_scanned / 1e6:.1f} MB, {s.lines} lines in {s.seconds:.1f} s "
        f"({s.engine}, {s.executor}, {s.workers} worker(s))",
        style="dim",
        markup=False,
    )
    for job in report.jobs:
        facts = _facts_line(job)
        out.print(f"Job {job.root}" + (f": {facts}" if facts else ""), style="dim", markup=False)
    if not report.findings:
        out.print("No problems found.", style="green")
    by_root: dict[str, list[Finding]] = {}
    for f in report.findings:
        if f.kind == "cascade" and f.caused_by:
            by_root.setdefault(f.caused_by, []).append(f)
    for f in report.findings:
        if f.kind == "cascade" and f.caused_by:
            continue  # shown under the failure that caused it
        render_finding(out, f, by_root.get(f.incident.id, []) if f.incident else [])
    for note in report.notes:
        out.print(f"note: {note}", style="dim", markup=False)
    if report.skipped:
        out.rule("skipped", style="dim")
        for sk in report.skipped:
            label = "partly read" if sk.partial else "skipped"
            out.print(f"{label}: {sk.path}: {sk.reason}", style="dim", markup=False)


def render_finding(out: Console, f: Finding, cascade: list[Finding]) -> None:
    f, cascade = terminal_safe_model(f), terminal_safe_model(cascade)
    style = _SEV_STYLE[f.severity]
    label = {
        "failure": "FIRST FAILURE",
        "error": "ERROR",
        "cascade": "CASCADE",
        "metric": "METRIC",
        "override": "OVERRIDE",
        "warning": "WARNING",
    }[f.kind]
    out.rule(f"{f.id} {label}", style=style)
    conf = f" [{f.verdict} {f.confidence:.2f}]" if f.confidence is not None else ""
    out.print(f"[{style}]{escape(f.title)}[/]{escape(conf)}", markup=True, highlight=False)
    if f.entry_id:
        out.print(f"  entry: {f.entry_id}", markup=False)
    inc = f.incident
    if inc is not None:
        out.print(f"  {_where(inc)}", markup=False)
        if inc.title != f.title:
            out.print(f"  {inc.title[:240]}", markup=False)
        best = inc.diagnosis.matches[0] if inc.diagnosis.matches else None
        if best is not None:
            cause = best.cause.split("\n\n")[0].strip()
            if cause:
                out.print(f"  why: {cause[:600]}", markup=False)
            _fix(out, best.overrides, best.actions, inc.diagnosis.verl_version_used, best.env)
        for issue in inc.diagnosis.similar_issues[:3]:
            state = f" [{issue.state}]" if issue.state else ""
            out.print(
                f"  similar issue: #{issue.number}{state} {issue.title[:120]} {issue.url} ({issue.score:.2f})",
                style="dim",
                markup=False,
            )
        for c in cascade:
            if c.incident is not None:
                out.print(f"  caused: {c.incident.title[:160]} — {_where(c.incident)}", style="dim", markup=False)
    if f.metric is not None:
        for ev in f.metric.evidence:
            if ev.kind == "metric":
                out.print(f"  {ev.text}", markup=False)
        _fix(out, f.metric.overrides, f.metric.actions, None, f.metric.env)
    if f.override is not None and f.override.suggestion:
        out.print(f"  use: {f.override.suggestion}", markup=False)


def fix_lines(overrides: list[RenderedOverride], version: str | None) -> list[tuple[str, list[str]]]:
    """(label, override lines): one group for the job's verl version; without a version, one per verl
    range, each saying which releases it is for (never every range run together as one fix)."""
    if not overrides:
        return []
    if version:
        return [(f"verl {version}", [o.line for o in overrides])]
    by_range: dict[str, list[str]] = {}
    for o in overrides:
        by_range.setdefault(o.verl, []).append(o.line)
    return [(f"verl {spec}", lines) for spec, lines in by_range.items()]


def _fix(
    out: Console,
    overrides: list[RenderedOverride],
    actions: list[str],
    version: str | None,
    env: list[EnvSetting] | None = None,
) -> None:
    rows = fix_lines(overrides, version)
    if len(rows) > 1:
        out.print("  fix (no verl version found in the job; one line per release range):", markup=False)
        for label, line in rows:
            out.print(f"    {label}: {' '.join(line)}", markup=False)
    for label, line in rows if len(rows) == 1 else []:
        out.print(f"  fix ({label}): {' '.join(line)}", markup=False)
    for e in env or []:
        out.print(f"  env: export {e.line}" + (f"  ({e.note})" if e.note else ""), markup=False)
    for a in actions[:3]:
        out.print(f"  - {a}", markup=False)


def _md_fix(overrides: list[RenderedOverride], version: str | None) -> list[str]:
    out: list[str] = []
    for label, line in fix_lines(overrides, version):
        out += [f"Fix ({label}):", "", "```", *line, "```", ""]
    return out


def render_markdown(report: ScanReport) -> str:
    """A report ready to paste into a GitHub issue."""
    report = terminal_safe_model(report)
    lines = [f"## verl-doctor scan ({len(report.findings)} finding(s))", ""]
    for job in report.jobs:
        lines.append(f"- job `{job.root}`: {_facts_line(job) or 'no environment facts found'}")
    s = report.stats
    lines += [f"- scanned {s.files} files, {s.bytes_scanned / 1e6:.1f} MB in {s.seconds:.1f} s", ""]
    if not report.findings:
        lines.append("No problems found.")
    for f in report.findings:
        conf = f" — {f.verdict} {f.confidence:.2f}" if f.confidence is not None else ""
        entry = f" (`{f.entry_id}`)" if f.entry_id else ""
        lines.append(f"### {f.id} {f.kind}: {f.title}{entry}{conf}")
        lines.append("")
        inc = f.incident
        if inc is not None:
            lines.append(f"Seen {_where(inc)}." + (f" Caused by {inc.caused_by}." if inc.caused_by else ""))
            lines.append("")
            best = inc.diagnosis.matches[0] if inc.diagnosis.matches else None
            if best is not None and best.overrides:
                lines += _md_fix(best.overrides, inc.diagnosis.verl_version_used)
            if best is not None and best.env:
                lines += ["Environment:", "", "```", *[f"export {e.line}" for e in best.env], "```", ""]
                lines += [f"- `{e.name}`: {e.note}" for e in best.env if e.note] + [""]
            if best is not None and best.actions:
                lines += [f"- {a}" for a in best.actions] + [""]
            similar = inc.diagnosis.similar_issues[:3]
            if similar:
                lines.append("Similar past issues:")
                lines.append("")
                for issue in similar:
                    state = f"{issue.state}, " if issue.state else ""
                    lines.append(f"- [#{issue.number} {_md_text(issue.title)}]({issue.url}) ({state}{issue.score:.2f})")
                lines.append("")
            excerpt = inc.excerpt[-30:]
            lines += ["<details><summary>excerpt</summary>", "", "```", *excerpt, "```", "", "</details>", ""]
        if f.metric is not None:
            lines += [f"- {ev.text}" for ev in f.metric.evidence if ev.kind == "metric"]
            if f.metric.overrides:
                lines += ["", *_md_fix(f.metric.overrides, None)]
            lines.append("")
        if f.override is not None and f.override.suggestion:
            lines += [f"Use `{f.override.suggestion}`.", ""]
    if report.skipped:
        lines += ["### Skipped", ""]
        lines += [f"- `{sk.path}`: {sk.reason}" for sk in report.skipped]
    return "\n".join(lines).rstrip() + "\n"


def _md_text(text: str) -> str:
    """Issue titles inside link text: brackets and backticks would end or break the link."""
    return text.replace("[", "(").replace("]", ")").replace("`", "'")[:160]


def render_sarif(report: ScanReport) -> str:
    """SARIF 2.1.0: one rule per corpus entry (or finding kind), one result per finding."""
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for f in report.findings:
        rule_id = f.entry_id or f"verl-doctor/{f.kind}"
        rules.setdefault(rule_id, {"id": rule_id, "shortDescription": {"text": f.title[:200]}})
        result: dict[str, Any] = {
            "ruleId": rule_id,
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.title},
            "properties": {"kind": f.kind, "severity": f.severity, "confidence": f.confidence, "job": f.job},
        }
        locs = []
        if f.incident is not None:
            for loc in f.incident.locations[:10]:
                locs.append(_sarif_location(f.job, loc.file, loc.line))
            result["properties"].update(
                {"count": f.incident.count, "ranks": f.incident.ranks, "causedBy": f.incident.caused_by}
            )
            similar = f.incident.diagnosis.similar_issues[:3]
            if similar:
                result["properties"]["similarIssues"] = [
                    {"number": i.number, "title": i.title, "url": i.url, "state": i.state, "score": i.score}
                    for i in similar
                ]
        if f.metric is not None:
            ev = next((e for e in f.metric.evidence if e.kind == "metric"), None)
            if ev is not None and ev.steps is not None:
                result["properties"]["steps"] = list(ev.steps)
        if locs:
            result["locations"] = locs
        results.append(result)
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "verl-doctor",
                        "version": __version__,
                        "informationUri": "https://github.com/verl-project/verl",
                        "rules": list(rules.values()),
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(sarif, indent=1)


def _sarif_location(job: str, file: str, line: int) -> dict[str, Any]:
    uri = file if file.startswith("/") else f"{job.rstrip('/')}/{file}" if job != file else file
    return {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": max(1, line)}}}
