"""The Jobs tab: pick a job's output directory, scan it in the background, browse what it found."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import ContentSwitcher, DirectoryTree, Input, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from kb.render_text import terminal_safe
from tui.engine import DoctorEngine, UsesEngine
from tui.safe_text import fill, lines
from tui.widgets.diagnose.results import copy_text, detail_body

if TYPE_CHECKING:
    from kb.scan.report import Finding, ScanReport

_SEVERITY_STYLE = {"critical": "bold red", "error": "red", "warning": "yellow", "note": "dim"}


def finding_prompt(finding: Finding) -> Text:
    """One line of the findings list: severity, title, how often."""
    count = finding.incident.count if finding.incident else 1
    return Text.assemble(
        (f"{finding.severity:<8} ", _SEVERITY_STYLE.get(finding.severity, "")),
        terminal_safe(finding.title),
        (f"  ({count} times)" if count > 1 else "", "dim"),
    )


def finding_markup(finding: Finding) -> tuple[Content, Content, Content]:
    """The drill-down of one finding: (where and how often, the excerpt with its evidence lines marked, the
    diagnosis). Layout in Textual markup; every piece of the input (titles, lines, file names) plain text."""
    head: list[Content | str] = [
        fill("[b]$title[/b]", title=finding.title),
        fill("[$text-muted]$id · $kind · $severity[/]", id=finding.id, kind=finding.kind, severity=finding.severity),
    ]
    if finding.caused_by:
        head.append(fill("[$text-muted]follows from $cause[/]", cause=finding.caused_by))
    excerpt: list[Content | str] = []
    body: list[Content | str] = []
    inc = finding.incident
    if inc is not None:
        times = f"{inc.count} times" if inc.count > 1 else "once"
        ranks = f" on rank(s) {', '.join(map(str, inc.ranks[:16]))}" if inc.ranks else ""
        files = f" in {len(inc.files)} files" if len(inc.files) > 1 else ""
        head.append(fill("$where", where=f"{times}{ranks}{files}; first at {inc.first.file}:{inc.first.line}"))
        if inc.time:
            head.append(fill("[$text-muted]$time[/]", time=inc.time))
        match = inc.diagnosis.matches[0] if inc.diagnosis.matches else None
        marked = {ev.line_no for ev in match.evidence if ev.line_no} if match else set()
        width = len(str(inc.excerpt_start + len(inc.excerpt)))
        for i, line in enumerate(inc.excerpt[:200]):
            no = f"{inc.excerpt_start + i:>{width}}"
            if inc.excerpt_start + i in marked:  # evidence lines are file lines
                excerpt.append(fill("[$text-warning]▶$no[/] [on $warning 20%]$text[/]", no=no, text=line[:500]))
            else:
                excerpt.append(fill("[$text-muted] $no[/] $text", no=no, text=line[:500]))
        if match is not None:
            verdict = "[$text-success]match[/]" if match.verdict == "match" else "[$text-warning]possible[/]"
            body += [
                f"[b]Diagnosis[/b]  {verdict} {match.confidence:.2f}  [$text-muted](o opens the entry)[/]",
                fill("[b]$title[/b]", title=match.title),
                fill("$cause", cause=match.cause.strip().split("\n\n")[0]),
                "",
                detail_body(match, inc.diagnosis),
            ]
        else:
            body.append("[$text-muted]No known problem matches this incident.[/]")
    elif finding.metric is not None:
        m = finding.metric
        body += [fill("[b]$title[/b]", title=m.title), fill("$cause", cause=m.cause.strip().split("\n\n")[0]), ""]
        body.append(detail_body(m, _result_for(m)))
    elif finding.override is not None:
        ov = finding.override
        body += [fill("[b]$text[/b]", text=ov.text), fill("$message", message=ov.message)]
        if ov.suggestion:
            body.append(fill("use: [$text-accent]$suggestion[/]", suggestion=ov.suggestion))
    return lines(head), lines(excerpt), lines(body)


def _result_for(match: Any) -> Any:
    from kb.result import Result, SignalsSummary

    return Result(kb_version="", abstained=False, signals=SignalsSummary(), matches=[match])


class JobsPane(UsesEngine, Vertical):
    """Path and progress at the top; the findings, worst first, and the open one below."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+b", "browse", "Browse dirs"),
        Binding("ctrl+l", "focus_path", "Path", show=False),
        Binding("s", "scan_highlighted", "Scan dir"),
        Binding("f", "toggle_follow", "Follow"),
        Binding("c", "copy_overrides", "Copy fix"),
        Binding("o", "open_entry", "Open entry"),
        Binding("p", "preflight", "Preflight"),
    ]

    DEFAULT_CSS = """
    JobsPane {
        #jobs-path { border: round $foreground 25%; }
        #jobs-path:focus { border: round $accent; }
        #jobs-progress-row { height: 1; padding: 0 1; }
        #jobs-progress { width: auto; }
        #jobs-status { width: 1fr; color: $text-muted; margin-left: 1; }
        #jobs-switcher { height: 1fr; }
        #jobs-findings { width: 2fr; text-wrap: nowrap; text-overflow: ellipsis; border: round $foreground 25%; }
        #jobs-findings:focus { border: round $accent; }
        #jobs-detail { width: 3fr; border: round $foreground 25%; padding: 0 1; }
        #jobs-detail:focus { border: round $accent; }
        #jobs-detail-excerpt { text-wrap: nowrap; text-overflow: ellipsis; margin: 1 0; }
        #jobs-tree { border: round $foreground 25%; }
        #jobs-tree:focus { border: round $accent; }
    }
    """

    def __init__(self, *, workers: int | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.scan_workers = workers
        self.report: ScanReport | None = None
        self.findings: list[Finding] = []  # what the list shows: the scan's, then what following adds
        self.following: Path | None = None
        self._pending: Path | None = None

    def compose(self) -> ComposeResult:
        path = Input(placeholder="job output directory or log file; Enter scans, Ctrl+B browses", id="jobs-path")
        path.border_title = "Job directory"
        yield path
        with Horizontal(id="jobs-progress-row"):
            yield ProgressBar(id="jobs-progress", show_eta=False)
            yield Static("Nothing scanned yet.", id="jobs-status")
        with ContentSwitcher(id="jobs-switcher", initial="jobs-results"), Horizontal(id="jobs-results"):
            findings = OptionList(id="jobs-findings")
            findings.border_title = "Findings"
            yield findings
            with VerticalScroll(id="jobs-detail", can_focus=True) as detail:
                detail.border_title = "Detail"
                yield Static("Scan a directory to see what went wrong in it.", id="jobs-detail-head")
                yield Static(id="jobs-detail-excerpt")
                yield Static(id="jobs-detail-body")
        # The directory tree is mounted on the first Ctrl+B: no directory is listed before it is asked for.

    def engine_updated(self) -> None:
        if self.engine is not None and self._pending is not None:
            path, self._pending = self._pending, None
            self.start_scan(path)

    # -- picking

    @on(Input.Submitted, "#jobs-path")
    def _submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.start_scan(Path(event.value.strip()).expanduser())

    def action_browse(self) -> None:
        switcher = self.query_one(ContentSwitcher)
        if switcher.current == "jobs-tree":
            switcher.current = "jobs-results"
            self.query_one("#jobs-findings").focus()
            return
        typed = Path(self.query_one("#jobs-path", Input).value.strip() or ".").expanduser()
        start = typed if typed.is_dir() else Path.cwd()
        trees = self.query(DirectoryTree)
        if trees:
            tree = trees.first()
            if typed.is_dir() and Path(tree.path) != typed:
                tree.path = typed
        else:
            tree = DirectoryTree(start, id="jobs-tree")
            tree.border_title = "Enter opens, s scans"
            switcher.mount(tree)
        switcher.current = "jobs-tree"
        tree.focus()

    @on(DirectoryTree.DirectorySelected, "#jobs-tree")
    def _dir_picked(self, event: DirectoryTree.DirectorySelected) -> None:
        # Enter on a directory opens it and puts it in the path box; s scans it.
        self.query_one("#jobs-path", Input).value = str(event.path)

    @on(DirectoryTree.FileSelected, "#jobs-tree")
    def _file_picked(self, event: DirectoryTree.FileSelected) -> None:
        self.query_one("#jobs-path", Input).value = str(event.path)
        self.start_scan(event.path)

    def action_scan_highlighted(self) -> None:
        node = self.query_one(DirectoryTree).cursor_node
        if node is not None and node.data is not None:
            self.start_scan(Path(node.data.path))

    def action_focus_path(self) -> None:
        self.query_one("#jobs-path", Input).focus()

    # -- scanning

    def start_scan(self, path: Path) -> None:
        if self.following is not None:
            self.workers.cancel_group(self, "follow")
            self._set_following(None)
        self.query_one("#jobs-path", Input).value = str(path)
        if not path.exists():
            self.notify(f"{path} does not exist.", severity="error")
            return
        self.query_one(ContentSwitcher).current = "jobs-results"
        status = self.query_one("#jobs-status", Static)
        engine = self.engine
        if engine is None:
            self._pending = path
            status.update("waiting for the rules to load…")
            return
        bar = self.query_one(ProgressBar)
        bar.update(total=None, progress=0)
        status.update(fill("scanning $path…", path=path))
        self.query_one("#jobs-findings", OptionList).clear_options()
        self._run_scan(engine, path)

    @work(thread=True, exclusive=True, group="scan")
    def _run_scan(self, engine: DoctorEngine, path: Path) -> None:
        worker = get_current_worker()

        def progress(done: int, total: int) -> None:
            if not worker.is_cancelled:
                self.app.call_from_thread(self._progress, done, total)

        try:
            from kb.scan.runner import scan_while_loading
            from kb.scan.spec import ScanSpec

            # The scan's own diagnoser takes a second to build the first time: the bytes stream meanwhile,
            # with the patterns of the diagnoser the app already holds (the same corpus).
            report = scan_while_loading(
                [path],
                engine.scan_diagnoser,
                ScanSpec.of(engine.diagnoser),
                workers=self.scan_workers,
                on_progress=progress,
            )
        except Exception as exc:  # a scan problem is a message, never a crash of the app
            self.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, report)

    def _progress(self, done: int, total: int) -> None:
        self.query_one(ProgressBar).update(total=max(total, 1), progress=done)
        self.query_one("#jobs-status", Static).update(f"scanning: {done / 1e6:.1f} of {total / 1e6:.1f} MB…")

    def _failed(self, message: str) -> None:
        self.query_one("#jobs-status", Static).update(fill("scan failed: $message", message=message))
        self.notify(message, title="Scan failed", severity="error")

    def _show(self, report: ScanReport) -> None:
        self.report = report
        self.findings = list(report.findings)
        s = report.stats
        bar = self.query_one(ProgressBar)
        bar.update(total=1, progress=1)
        skipped = f" · {len(report.skipped)} skipped" if report.skipped else ""
        empty = not report.findings and not s.files
        found = f"{len(report.findings)} finding(s)" if report.findings else "no logs found" if empty else "no problems"
        self.query_one("#jobs-status", Static).update(
            f"{found} · {s.files} file(s) · {s.lines} lines · {s.seconds:.1f} s{skipped}"
        )
        findings = self.query_one("#jobs-findings", OptionList)
        findings.clear_options()
        if report.findings:
            findings.add_options([Option(finding_prompt(f), id=f.id) for f in report.findings])
            findings.highlighted = 0
        else:
            findings.add_option(Option("No logs found here." if empty else "No problems found.", disabled=True))
        for sk in report.skipped:
            skipped = terminal_safe(f"skipped  {sk.path}: {sk.reason}")
            findings.add_option(Option(Text(skipped, style="dim"), disabled=True))
        self._show_current()
        findings.focus()

    @property
    def current_finding(self) -> Finding | None:
        index = self.query_one("#jobs-findings", OptionList).highlighted
        if index is None or index >= len(self.findings):
            return None
        return self.findings[index]

    # -- following a running job

    def action_toggle_follow(self) -> None:
        if self.following is not None:
            self.workers.cancel_group(self, "follow")
            self._set_following(None)
            return
        typed = self.query_one("#jobs-path", Input).value.strip()
        path = Path(typed).expanduser() if typed else None
        engine = self.engine
        if path is None or not path.exists():
            self.notify("Type or pick the job directory to follow first.", severity="warning")
            return
        if engine is None:
            self.notify("The rules are still loading; try again in a moment.", severity="warning")
            return
        self.workers.cancel_group(self, "scan")
        self.query_one(ContentSwitcher).current = "jobs-results"
        self.report, self.findings = None, []
        self.query_one("#jobs-findings", OptionList).clear_options()
        self._show_current()
        self._set_following(path)
        self._follow(engine, path)

    def _set_following(self, path: Path | None) -> None:
        self.following = path
        bar = self.query_one(ProgressBar)
        status = self.query_one("#jobs-status", Static)
        if path is None:
            bar.update(total=1, progress=1)
            status.update(f"stopped following · {len(self.findings)} finding(s)")
        else:
            bar.update(total=None)
            status.update(fill("following $path · f stops", path=path))

    @work(thread=True, exclusive=True, group="follow")
    def _follow(self, engine: DoctorEngine, path: Path, interval: float = 1.0) -> None:
        worker = get_current_worker()
        try:
            from kb.scan.follow import Follower

            follower = Follower([path], engine.scan_diagnoser())
            while not worker.is_cancelled:
                follower.poll()
                fresh = follower.new_findings()
                if fresh and not worker.is_cancelled:
                    self.app.call_from_thread(self._followed, fresh)
                for _ in range(int(interval / 0.05)):
                    if worker.is_cancelled:
                        break
                    time.sleep(0.05)
            follower.close()
        except Exception as exc:  # a problem while following is a message, never a crash of the app
            self.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            self.app.call_from_thread(self._set_following, None)

    def _followed(self, fresh: list[Finding]) -> None:
        """New findings of the followed job, in the order they appeared."""
        if self.following is None:
            return
        findings = self.query_one("#jobs-findings", OptionList)
        first_batch = not self.findings
        for finding in fresh:
            finding.id = f"F{len(self.findings) + 1}"
            self.findings.append(finding)
            findings.add_option(Option(finding_prompt(finding), id=finding.id))
        if first_batch:
            findings.highlighted = 0
            self._show_current()
        if len(fresh) == 1:
            self.notify(fresh[0].title[:200], title=f"New finding ({fresh[0].severity})")
        else:
            self.notify(f"{len(fresh)} new findings", title="Following")
        self.query_one("#jobs-status", Static).update(
            fill(f"following $path · {len(self.findings)} finding(s) · f stops", path=self.following)
        )

    def _show_current(self) -> None:
        head, excerpt, body = (self.query_one(f"#jobs-detail-{part}", Static) for part in ("head", "excerpt", "body"))
        finding = self.current_finding
        if finding is None:
            head.update("Nothing to show." if self.report and not self.findings else "")
            excerpt.update("")
            body.update("")
            return
        texts = finding_markup(finding)
        head.update(texts[0])
        excerpt.update(texts[1])
        excerpt.display = bool(texts[1])
        body.update(texts[2])
        self.query_one("#jobs-detail", VerticalScroll).scroll_home(animate=False)

    @on(OptionList.OptionHighlighted, "#jobs-findings")
    def _highlighted(self) -> None:
        self._show_current()

    @on(OptionList.OptionSelected, "#jobs-findings")
    def _selected(self) -> None:
        self.query_one("#jobs-detail").focus()

    # -- the open finding

    def _match(self) -> Any:
        finding = self.current_finding
        if finding is None:
            return None
        if finding.incident is not None and finding.incident.diagnosis.matches:
            return finding.incident.diagnosis.matches[0]
        return finding.metric

    def action_copy_overrides(self) -> None:
        match = self._match()
        text = copy_text(match) if match is not None else ""
        if not text:
            self.notify("No overrides to copy for this finding.", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied: {text}", title="Fix copied (OSC 52)")

    def action_open_entry(self) -> None:
        finding = self.current_finding
        entry_id = finding.entry_id if finding else None
        opener = getattr(self.app, "open_entry", None)
        if entry_id and opener is not None:
            opener(entry_id)
        else:
            self.notify("This finding has no entry.", severity="warning")

    # -- preflight of the job's overrides (tui/widgets/jobs/preflight.py)

    def action_preflight(self) -> None:
        typed = self.query_one("#jobs-path", Input).value.strip()
        if not typed:
            self.notify("Type or pick the job directory first.", severity="warning")
            return
        self.query_one(ContentSwitcher).current = "jobs-results"
        self._run_preflight(Path(typed).expanduser())

    @work(thread=True, exclusive=True, group="preflight")
    def _run_preflight(self, path: Path) -> None:
        from tui.widgets.jobs.preflight import preflight_markup, run_preflight

        try:
            found, result = run_preflight(path)
        except (OSError, ValueError) as exc:  # no overrides.yaml, unreadable, bad input: a message
            self.app.call_from_thread(self.notify, str(exc), title="Preflight", severity="warning")
            return
        head, body = preflight_markup(found, result)
        self.app.call_from_thread(self._show_preflight, head, body, result.starts)

    def _show_preflight(self, head: Content, body: Content, starts: bool) -> None:
        self.query_one("#jobs-detail-head", Static).update(head)
        excerpt = self.query_one("#jobs-detail-excerpt", Static)
        excerpt.update("")
        excerpt.display = False
        self.query_one("#jobs-detail-body", Static).update(body)
        self.query_one("#jobs-status", Static).update(
            "preflight: " + ("verl would start" if starts else "verl would not start")
        )
        self.query_one("#jobs-detail", VerticalScroll).scroll_home(animate=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "scan_highlighted":
            return self.query_one(ContentSwitcher).current == "jobs-tree"
        return not (action in ("copy_overrides", "open_entry", "preflight") and isinstance(self.app.focused, Input))
