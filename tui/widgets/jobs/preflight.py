"""The Jobs tab's preflight: the overrides a job directory's Hydra recorded (``.hydra/overrides.yaml``) checked the
way verl checks them at start-up, shown in the detail pane."""

from __future__ import annotations

from pathlib import Path

from textual.content import Content

from kb.preflight.models import PreflightResult
from tui.safe_text import fill, lines

_STYLE = {"error": "$text-error", "later": "$text-warning", "warning": "$text-muted"}


def run_preflight(path: Path) -> tuple[Path, PreflightResult]:
    """Raises FileNotFoundError when the directory has no overrides.yaml, ValueError when it cannot be read."""
    from kb.preflight.api import preflight_text
    from kb.preflight.inputs import find_overrides

    found = find_overrides(path)
    if found is None:
        raise FileNotFoundError(f"no .hydra/overrides.yaml in {path}")
    try:
        text = found.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {found}: {exc}") from None
    return found, preflight_text(text)


def preflight_markup(found: Path, result: PreflightResult) -> tuple[Content, Content]:
    """(head, body) of the detail pane; every piece of the input is plain text."""
    errors = [f for f in result.findings if f.severity == "error"]
    later = [f for f in result.findings if f.severity == "later"]
    if errors:
        verdict = f"[$text-error]verl would not start[/]: {len(errors)} error(s), the first is the one verl raises"
    elif later:
        verdict = f"[$text-warning]verl would start, then fail[/]: {len(later)} finding(s)"
    else:
        verdict = "[$text-success]verl would start[/]"
    head = lines(
        [
            "[b]Preflight[/b]  " + verdict,
            fill(
                "[$text-muted]$file · verl $release · $n override(s)[/]",
                file=found,
                release=result.release_checked,
                n=len(result.overrides),
            ),
        ]
    )
    body: list[Content | str] = []
    for note in result.notes:
        body.append(fill("[$text-muted]note: $note[/]", note=note))
    for n, f in enumerate(result.findings, 1):
        style = _STYLE[f.severity]
        body.append(
            fill(
                f"[{style}]$n. $severity[/] [b]$check[/b] [$text-muted]($stage)[/]",
                n=n,
                severity=f.severity,
                check=f.check,
                stage=f.stage,
            )
        )
        body += [fill("   $line", line=row) for row in f.message.splitlines()[:6]]
        body += [
            fill("   [$text-muted]$key = $value ($source)[/]", key=v.key, value=v.value, source=v.source)
            for v in f.values[:8]
        ]
        if f.overrides:
            body.append(fill("   fix: [$text-accent]$line[/]", line=" ".join(o.line for o in f.overrides)))
        for alt in f.alternatives:
            body.append(fill("   or: [$text-accent]$line[/]", line=" ".join(o.line for o in alt.overrides)))
        if f.entry:
            body.append(fill("   [$text-muted]entry: $entry[/]", entry=f.entry))
        body.append("")
    return head, lines(body)
