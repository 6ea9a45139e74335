"""Terminal rendering with rich (plain text when the output is not a terminal)."""

from __future__ import annotations

import re
import shlex
from typing import Any, TypeVar

from pydantic import BaseModel
from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape

from kb.entry import Entry, Override
from kb.overrides import OverrideReport, render_override
from kb.result import RenderedOverride, Result
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
    "other_config": "yellow",
}


# ESC sequences (CSI, OSC up to BEL or ST, DCS/SOS/PM/APC strings, two-byte escapes), their 8-bit C1 forms,
# the other C0 controls but tab and newline, DEL, and the bidi overrides that reorder what a line shows.
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)

T = TypeVar("T")


def terminal_safe(text: str) -> str:
    """``text`` with every terminal control sequence removed (a log line with OSC 52 must not write the
    clipboard, a file name must not clear the screen); bytes that were not UTF-8 (surrogate escapes) show as
    U+FFFD. Tabs and newlines stay."""
    if text.isascii() and text.isprintable():
        return text
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _CONTROL.sub("", text)


def terminal_safe_model(value: T) -> T:
    """A copy of ``value`` (a pydantic model, list, dict or str, nested) with :func:`terminal_safe` applied to
    every string in it, for printing; the original is untouched (JSON output keeps the exact text)."""
    return _clean(value)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, BaseModel):
        update = {}
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = _clean(old)
            if new is not old:
                update[name] = new
        return value.model_copy(update=update) if update else value
    if isinstance(value, list):
        cleaned = [_clean(v) for v in value]
        return cleaned if any(a is not b for a, b in zip(cleaned, value, strict=True)) else value
    if isinstance(value, tuple):
        cleaned_t = tuple(_clean(v) for v in value)
        return cleaned_t if any(a is not b for a, b in zip(cleaned_t, value, strict=True)) else value
    if isinstance(value, dict):
        items = [(_clean(k), _clean(v)) for k, v in value.items()]
        changed = any(k2 is not k or v2 is not v for (k2, v2), (k, v) in zip(items, value.items(), strict=True))
        return dict(items) if changed else value
    return value


def console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def render_override_report(report: OverrideReport, out: Console | None = None) -> None:
    out = out or console()
    report = terminal_safe_model(report)
    checked = report.release_checked
    note = f" (checked against the {checked} key set)" if checked != report.verl_version else ""
    config = f", {report.config} config" if report.config else ""
    out.print(f"verl {report.verl_version}{note}{config}")
    for v in report.verdicts:
        style = _STATUS_STYLE[v.status]
        mark = "FAIL" if v.fails else ("note" if v.status == "other_config" else "ok  ")
        out.print(f"[{style}]{mark}[/] {escape(v.text)}", markup=True)
        out.print(f"     {v.message}", markup=False)
        if v.suggestion:
            out.print(f"     use: {v.suggestion}", markup=False)
    failed = sum(v.fails for v in report.verdicts)
    out.print(
        f"{failed} of {len(report.verdicts)} override(s) would fail or be ignored" if failed else "all overrides fine"
    )


def overrides_by_version(
    entry: Entry, version: str | None, overrides: list[Override] | None = None
) -> list[tuple[str, str]]:
    """(range, rendered line) for each override (the main fix's unless ``overrides`` is given); one version's
    lines only when ``version`` is given."""
    rows = []
    for ov in entry.meta.fix.overrides if overrides is None else overrides:
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
    out.rule(escape(f"{m.id}  [{m.area}]"))
    out.print(m.title, style="bold", markup=False)
    out.print(f"verl {m.verl}", markup=False)
    if m.fix.overrides:
        # One line per override, never a table cell: a line someone pastes is never cut or wrapped.
        for spec, line in overrides_by_version(entry, version):
            out.print(line, end="", markup=False, soft_wrap=True)
            out.print(f"   # verl {spec}", style="dim", markup=False, soft_wrap=True)
    for alt in m.fix.alternatives:
        out.print(f"{alt.title}:", style="bold", markup=False)
        for spec, line in overrides_by_version(entry, version, alt.overrides):
            out.print(line, end="", markup=False, soft_wrap=True)
            out.print(f"   # verl {spec}", style="dim", markup=False, soft_wrap=True)
    computed = [o for _, group in m.fix.override_groups() for o in group if o.expr]
    for o in computed:
        out.print(f"{o.key}: example value; from a log it is computed as {o.expr}", style="dim", markup=False)
    for env in m.fix.env:
        out.print(
            f"export {env.name}={shlex.quote(env.value)}" + (f"   # {env.note}" if env.note else ""), markup=False
        )
    for action in m.fix.actions:
        out.print(f"- {action}", markup=False)
    for title, text in entry.sections.items():
        out.print(Markdown(f"## {title}\n\n{text}"))
    out.print("Sources:", style="bold")
    for s in m.sources:
        out.print(f"  {s}", markup=False)


_VERDICT_STYLE = {"match": "bold green", "possible": "yellow"}
_COND_MARK = {"holds": "[green]holds[/]", "fails": "[red]fails[/]", "unknown": "[dim]unknown[/]"}


def render_result(result: Result, out: Console | None = None) -> None:
    """The readable report of one diagnosis: best match first, with its evidence."""
    out = out or console()
    result = terminal_safe_model(result)
    sig = result.signals
    facts = [f"{k} {v}" for k, v in sig.versions.items()]
    if sig.gpu:
        facts.append(sig.gpu)
    if sig.exceptions:
        facts.append("exceptions: " + ", ".join(dict.fromkeys(sig.exceptions)))
    if facts:
        out.print("Seen: " + "; ".join(facts), style="dim", markup=False)
    for note in result.notes:
        out.print(f"note: {note}", style="dim", markup=False)
    render_did_you_mean(result, out)
    if not result.matches:
        out.print("No known problem matches this input. Try `verl-doctor corpus list` or ask in words.")
        render_similar_issues(result, out)
        return
    if result.abstained:
        out.print("Nothing matches with confidence; closest entries:", style="yellow")
    for i, m in enumerate(result.matches, 1):
        out.rule(f"{i}. {m.id}")
        out.print(f"[{_VERDICT_STYLE[m.verdict]}]{m.verdict}[/] {m.confidence:.2f}  ", end="")
        out.print(m.title, style="bold", markup=False)
        if m.known_bug is not None:
            out.print(m.known_bug.summary(), style="yellow", markup=False)
        first = m.cause.split("\n\n")[0].strip()
        if first:
            out.print(first, markup=False)
        if m.conditions:
            out.print("Conditions:", style="bold")
            for c in m.conditions:
                out.print(f"  {_COND_MARK[c.status]} ", end="")
                out.print(c.text, markup=False)
        if m.overrides:
            version = f" (verl {result.verl_version_used})" if result.verl_version_used else ""
            out.print(f"Fix{version}:", style="bold")
            _print_overrides(out, m.overrides, result.verl_version_used)
        for alt in m.alternatives:
            out.print(f"{alt.title}:", style="bold", markup=False)
            _print_overrides(out, alt.overrides, result.verl_version_used)
        if m.env:
            out.print("Environment:", style="bold")
            for e in m.env:
                out.print(f"  export {e.line}", markup=False)
                if e.note:
                    out.print(f"    {e.note}", style="dim", markup=False)
        for a in m.actions:
            out.print(f"  - {a}", markup=False)
        if m.evidence:
            out.print("Evidence:", style="bold")
            for ev in m.evidence[:5]:
                where = f"line {ev.line_no}: " if ev.line_no else ""
                out.print(f"  [{ev.kind}] {where}{ev.text[:200]}", markup=False)
        if i == 1 and m.sources:
            out.print("Sources: " + ", ".join(m.sources[:3]), style="dim", markup=False)
    render_similar_issues(result, out)


def _print_overrides(out: Console, overrides: list[RenderedOverride], version: str | None) -> None:
    """One block: each line whole, with what it applies to, and an example value marked as one."""
    for o in overrides:
        notes = [] if version else [f"verl {o.verl}"]
        if o.example:
            notes.append("example value: set it from your config")
        elif o.computed:
            notes.append(o.computed)
        out.print(f"  {o.line}" + (f"   # {'; '.join(notes)}" if notes else ""), markup=False)


def render_did_you_mean(result: Result, out: Console, indent: str = "") -> None:
    """For each key Hydra rejected, the key meant on the release, and the line to use when the input has the value."""
    for d in result.did_you_mean:
        where = f"line {d.line_no}: " if d.line_no else ""
        out.print(f"{indent}{where}{d.summary()}", style="yellow", markup=False)
        if d.line:
            out.print(f"{indent}  use: {d.line}", markup=False)


def render_similar_issues(result: Result, out: Console) -> None:
    """Past issues from an imported archive, beside (never instead of) the entries."""
    if not result.similar_issues:
        return
    out.rule("similar past issues")
    for issue in result.similar_issues:
        state = f" [{issue.state}]" if issue.state else ""
        out.print(f"#{issue.number}{state} {issue.title}", markup=False)
        out.print(f"  {issue.url}  (similarity {issue.score:.2f})", style="dim", markup=False)


def render_hits(diagnoser: Any, query: str, k: int, as_json: bool, out: Console | None = None) -> bool:
    """``corpus search``: the hits for ``query``, best first (JSON or one a line); whether any matched."""
    import json

    from kb.search import search_entries

    hits = search_entries(diagnoser, query, k)
    out = out or console()
    if as_json:
        out.print(json.dumps([h.model_dump() for h in hits], indent=1, ensure_ascii=False), markup=False)
    elif not hits:
        out.print(terminal_safe(f"No entry matches '{query}'. Try fewer words or an error message."), markup=False)
    for h in [] if as_json else hits:
        out.print(f"{h.score:.2f}  {h.id:<44} {terminal_safe(h.title)}", markup=False)
    return bool(hits)


def render_markdown_answer(text: str, out: Console | None = None) -> None:
    """An answer in Markdown on a terminal, as ``gh`` shows one: paragraphs and bullets wrapped at the
    terminal's width (never cut there, as the console's soft wrap did), control sequences stripped."""
    out = out or console()
    out.print(Markdown(terminal_safe(text)), soft_wrap=False)
