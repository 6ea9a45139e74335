"""Terminal rendering with rich (plain text when the output is not a terminal)."""

from __future__ import annotations

from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from kb.entry import Entry
from kb.overrides import OverrideReport, render_override
from kb.versions import KNOWN_RELEASES, in_range

_STATUS_STYLE = {
    "ok": "green",
    "deprecated": "yellow",
    "needs_plus": "red",
    "remove_plus": "red",
    "ignored": "red",
    "unknown": "red",
    "bad_value": "red",
    "malformed": "red",
}


def console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def render_override_report(report: OverrideReport, out: Console | None = None) -> None:
    out = out or console()
    checked = report.release_checked
    note = f" (checked against the {checked} key set)" if checked != report.verl_version else ""
    out.print(f"verl {report.verl_version}{note}")
    for v in report.verdicts:
        style = _STATUS_STYLE[v.status]
        mark = "ok  " if not v.fails else "FAIL"
        out.print(f"[{style}]{mark}[/] {v.text}", markup=True)
        out.print(f"     {v.message}", markup=False)
        if v.suggestion:
            out.print(f"     use: {v.suggestion}", markup=False)
    failed = sum(v.fails for v in report.verdicts)
    out.print(
        f"{failed} of {len(report.verdicts)} override(s) would fail or be ignored" if failed else "all overrides fine"
    )


def overrides_by_version(entry: Entry, version: str | None) -> list[tuple[str, str]]:
    """(range, rendered line) for each override; one version's lines only when ``version`` is given."""
    rows = []
    for ov in entry.meta.fix.overrides:
        if version is not None:
            if in_range(version, ov.verl):
                rows.append((ov.verl, render_override(ov.key, ov.value, version)))
            continue
        releases = [r for r in KNOWN_RELEASES if in_range(r, ov.verl)]
        rows.append((ov.verl, render_override(ov.key, ov.value, releases[-1]) if releases else f"{ov.key}={ov.value}"))
    return rows


def render_entry(entry: Entry, version: str | None, out: Console | None = None) -> None:
    out = out or console()
    m = entry.meta
    out.rule(f"{m.id}  [{m.area}]")
    out.print(m.title, style="bold", markup=False)
    out.print(f"verl {m.verl}", markup=False)
    if m.fix.overrides:
        table = Table("verl", "override", box=None, pad_edge=False)
        for spec, line in overrides_by_version(entry, version):
            table.add_row(spec, line)
        out.print(table)
    for action in m.fix.actions:
        out.print(f"- {action}", markup=False)
    for title, text in entry.sections.items():
        out.print(Markdown(f"## {title}\n\n{text}"))
    out.print("Sources:", style="bold")
    for s in m.sources:
        out.print(f"  {s}", markup=False)
