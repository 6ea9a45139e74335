"""The ranked diagnoses (title, verdict, confidence) and the detail of the highlighted one."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Markdown, OptionList, Static
from textual.widgets.option_list import Option

from kb.render_text import terminal_safe
from kb.result import Match, Result
from tui.safe_text import fill, lines

_VERDICT_STYLE = {"match": "bold green", "possible": "yellow"}
_CONDITION = {
    "holds": "[$text-success]✔ holds  [/]",
    "fails": "[$text-error]✘ fails  [/]",
    "unknown": "[$text-muted]? unknown[/]",
}


def match_prompt(match: Match) -> Text:
    """One line of the results list: verdict, confidence, title."""
    return Text.assemble(
        (f"{match.verdict:<8}", _VERDICT_STYLE[match.verdict]),
        (f" {match.confidence:.2f} ", "bold"),
        terminal_safe(match.title),
    )


def copy_text(match: Match) -> str:
    """What `c` copies: the overrides as one command-line fragment (each line is already quoted for a POSIX
    shell where it needs it); for a fix made of environment variables only, their export lines. Empty when
    the fix has neither."""
    if match.overrides:
        return " ".join(o.line for o in match.overrides)
    return "\n".join(f"export {e.line}" for e in match.env)


class ResultsList(OptionList):
    """Diagnoses, best first. The option id is the entry id."""

    DEFAULT_CSS = """
    ResultsList { height: auto; max-height: 40%; min-height: 3; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def show(self, result: Result, keep: str | None = None) -> None:
        """Fill the list from ``result``; highlight ``keep`` when it is still there, else the first."""
        self.clear_options()
        if not result.matches:
            self.add_option(Option("No known problem matches this input.", id="none", disabled=True))
            return
        self.add_options([Option(match_prompt(m), id=m.id) for m in result.matches])
        ids = [m.id for m in result.matches]
        self.highlighted = ids.index(keep) if keep in ids else 0


class MatchDetail(VerticalScroll, can_focus=True):
    """Cause, conditions, the overrides for the detected verl version, actions, evidence, sources."""

    DEFAULT_CSS = """
    MatchDetail {
        height: 1fr;
        padding: 0 1;
        & > Static { width: 1fr; }
        & > Markdown { margin: 0; padding: 0; }
        & > #detail-head { margin-bottom: 1; }
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="detail-head")
        yield Markdown(id="detail-cause")
        yield Static(id="detail-body")

    def show_hint(self, text: Content | str) -> None:
        self.query_one("#detail-head", Static).update(text)
        self.query_one("#detail-cause", Markdown).update("")
        self.query_one("#detail-body", Static).update("")

    def show(self, match: Match, result: Result) -> None:
        verdict = "[$text-success]match[/]" if match.verdict == "match" else "[$text-warning]possible[/]"
        head = fill(
            "[b]$title[/b]\n[$text-muted]$id · $area[/] · " + verdict + f" {match.confidence:.2f}",
            title=match.title,
            id=match.id,
            area=match.area,
        )
        self.query_one("#detail-head", Static).update(head)
        self.query_one("#detail-cause", Markdown).update(match.cause.strip())
        self.query_one("#detail-body", Static).update(detail_body(match, result))
        self.scroll_home(animate=False)


def detail_body(match: Match, result: Result) -> Content:
    """The part of the detail after the cause: layout in markup, everything from the input as plain text."""
    parts: list[Content | str] = []
    if match.conditions:
        parts.append("[b]Conditions[/b]")
        parts += [fill(f" {_CONDITION[c.status]} $text", text=c.text) for c in match.conditions]
    version = result.verl_version_used
    if match.overrides:
        parts.append("")
        where = f"verl {version}" if version else "each verl range (no verl version found in the input)"
        parts.append(fill("[b]Fix for $where[/b]  [$text-muted](c copies)[/]", where=where))
        for o in match.overrides:
            suffix = "" if version else "  [$text-muted]# verl $verl[/]"
            parts.append(fill("  [$text-accent]$line[/]" + suffix, line=o.line, verl=o.verl))
    if match.env:
        parts.append("")
        parts.append("[b]Environment[/b]")
        for e in match.env:
            parts.append(fill("  [$text-accent]export $line[/]", line=e.line))
            if e.note:
                parts.append(fill("    [$text-muted]$note[/]", note=e.note))
    if match.actions:
        parts.append("")
        parts.append("[b]Actions[/b]")
        parts += [fill("  • $action", action=a) for a in match.actions]
    if match.evidence:
        parts.append("")
        parts.append("[b]Evidence[/b]  [$text-muted](n/p in the input)[/]")
        for ev in match.evidence:
            where = f"line {ev.line_no}" if ev.line_no else (f"steps {ev.steps[0]}-{ev.steps[1]}" if ev.steps else "")
            parts.append(
                fill(
                    "  [$text-warning]$where[/] $kind: $text",
                    where=f"{where:>9}",
                    kind=ev.kind,
                    text=ev.text.strip()[:300],
                )
            )
    if match.sources:
        parts.append("")
        parts.append("[b]Sources[/b]")
        parts += [fill("  $source", source=s) for s in match.sources]
    return lines(parts)


__all__ = ["MatchDetail", "ResultsList", "copy_text", "detail_body", "match_prompt"]
