"""The plain-text report of a preflight (no markup; control bytes from the input never reach the terminal)."""

from __future__ import annotations

import re

from kb.preflight.models import PreflightFinding, PreflightResult

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MARK = {"error": "FAIL ", "later": "LATER", "warning": "warn "}


def safe(text: str) -> str:
    """``text`` without terminal control bytes (an escape sequence in an override is data, not a command)."""
    return _CONTROL.sub("?", text)


def _finding(f: PreflightFinding, n: int) -> list[str]:
    lines = [f"{_MARK[f.severity]} {n}. [{f.stage}] {f.check}" + (f"  (entry: {f.entry})" if f.entry else "")]
    for row in f.message.splitlines() or [""]:
        lines.append(f"      {row}")
    if f.explanation and f.explanation != f.message:
        lines.append(f"      why: {f.explanation}")
    for v in f.values:
        note = f"  ({v.note})" if v.note and v.source != "override" else ""
        lines.append(f"      {v.key} = {v.value}   [{v.source}]{note}")
    if f.overrides:
        lines.append("      fix:")
        # The line alone, so that copying it into a command line copies no shell comment with it.
        lines += [f"        {o.line}" for o in f.overrides]
        lines += [f"      ({o.key} {o.computed})" for o in f.overrides if o.computed]
    for alt in f.alternatives:
        lines.append(f"      or: {alt.title.removeprefix('or ')}")
        lines += [f"        {o.line}" for o in alt.overrides]
    if f.verl_source:
        lines.append(f"      verl checks it in {f.verl_source}")
    return lines


def render_preflight(result: PreflightResult) -> str:
    head = f"verl {result.verl_version}"
    if result.release_checked != result.verl_version:
        head += f" (checked with the rules of {result.release_checked})"
    head += {
        "option": "",
        "installed": " (the installed verl)",
        "newest": " (no verl installed: the newest release known)",
    }[result.version_source]
    lines = [head, f"{len(result.overrides)} override(s) checked"]
    for note in result.notes:
        lines.append(f"note: {note}")
    for n, f in enumerate(result.findings, 1):
        lines += _finding(f, n)
    errors = sum(f.severity == "error" for f in result.findings)
    later = sum(f.severity == "later" for f in result.findings)
    if errors:
        lines.append(f"verl would not start: {errors} error(s); the first is the one verl raises")
    elif later:
        lines.append(f"verl would start, then fail: {later} finding(s) after start-up")
    else:
        lines.append("verl would start" + (" (warnings above)" if result.findings else ""))
    return "\n".join(safe(line) for line in lines)
