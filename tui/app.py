"""The verl-doctor Textual app: tabs for diagnosing a paste, the FAQ, job directories and chat."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.widgets import Footer, Header, TabbedContent, TabPane

from kb.render_text import terminal_safe
from tui.config import TuiSettings
from tui.engine import DoctorEngine
from tui.widgets.chat.pane import ChatPane
from tui.widgets.diagnose.pane import DiagnosePane
from tui.widgets.faq.pane import FaqPane
from tui.widgets.jobs.pane import JobsPane

#: Tab id -> the widget that gets the focus when the tab is shown.
_TAB_FOCUS = {"diagnose": "#paste", "faq": "#faq-search", "jobs": "#jobs-path", "chat": "#chat-input"}


class DoctorApp(App[None]):
    """Paste a traceback and see the diagnosis with its evidence; browse the FAQ; scan a job directory."""

    TITLE = "verl-doctor"
    AUTO_FOCUS = None  # on_mount focuses the tab the app opens on

    CSS = """
    Screen { layout: vertical; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help"),
        Binding("question_mark", "help", "Help", show=False),
        Binding("f2", "show_tab('diagnose')", "Diagnose", show=False),
        Binding("f3", "show_tab('faq')", "FAQ", show=False),
        Binding("f4", "show_tab('jobs')", "Jobs", show=False),
        Binding("f5", "show_tab('chat')", "Chat", show=False),
        Binding("ctrl+t", "toggle_theme", "Theme"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(
        self,
        settings: TuiSettings | None = None,
        *,
        engine: DoctorEngine | None = None,
        text: str | None = None,
        source: str | None = None,
        scan: Path | None = None,
        notes: list[str] | None = None,
    ) -> None:
        """``engine``: an already loaded one (tests); otherwise the corpus loads after the first paint.
        ``text`` is diagnosed at once (``source`` names it); ``scan`` opens the Jobs tab on that path."""
        super().__init__()
        self.settings = settings or TuiSettings()
        self.engine: DoctorEngine | None = None
        self._given_engine = engine
        self._initial_text = text
        self._source = terminal_safe(source) if source is not None else None
        self._scan = scan
        self._notes = notes or []
        self.theme = self.settings.dark_theme if self.settings.theme == "dark" else self.settings.light_theme

    def compose(self) -> ComposeResult:
        yield Header(icon="✚")
        with TabbedContent(id="tabs", initial="jobs" if self._scan else "diagnose"):
            with TabPane("Diagnose", id="diagnose"):
                yield DiagnosePane(top=self.settings.top)
            with TabPane("FAQ", id="faq"):
                yield FaqPane(search_delay=self.settings.search_delay)
            with TabPane("Jobs", id="jobs"):
                yield JobsPane(workers=self.settings.scan_workers)
            with TabPane("Chat", id="chat"):
                yield ChatPane()
        yield Footer()

    def on_mount(self) -> None:
        for widget in self.query("Input, TextArea"):
            widget.cursor_blink = self.settings.cursor_blink  # type: ignore[attr-defined]
        self.query_one(_TAB_FOCUS["jobs" if self._scan else "diagnose"]).focus()
        self._set_status("loading the corpus and rules…")
        for note in self._notes:
            self.notify(note, severity="warning", timeout=8)
        if self._initial_text is not None:
            if self._source:
                self.sub_title = f"{self._source} · loading the rules…"
            self.query_one(DiagnosePane).diagnose_text(self._initial_text)
        if self._scan is not None:
            self.query_one(TabbedContent).active = "jobs"
            self.query_one(JobsPane).start_scan(self._scan)
        if self._given_engine is not None:
            self._engine_loaded(self._given_engine)
        else:
            self._load_rules()

    # -- loading: rules first (a worker thread), then the model (a daemon thread: quitting never waits for it)

    @work(thread=True, exclusive=True, group="load-rules")
    def _load_rules(self) -> None:
        from indexer import load_diagnoser
        from kb.corpus import CorpusError

        try:
            diagnoser = load_diagnoser(self.settings.corpus, self.settings.semantic)
        except CorpusError as exc:
            self.call_from_thread(self._load_failed, str(exc))
            return
        self.call_from_thread(self._engine_loaded, DoctorEngine(diagnoser, semantic=self.settings.semantic))

    def _load_failed(self, message: str) -> None:
        self._set_status("no corpus")
        self.notify(message, title="Cannot load the corpus", severity="error", timeout=30)

    def _engine_loaded(self, engine: DoctorEngine) -> None:
        self.engine = engine
        self._update_status()
        self._broadcast()
        if engine.model_state == "loading":
            threading.Thread(target=self._load_model, args=(engine,), name="verl-doctor-model", daemon=True).start()

    def _load_model(self, engine: DoctorEngine) -> None:
        engine.load_model()
        with contextlib.suppress(RuntimeError):  # the app has already closed
            self.call_from_thread(self._model_loaded)

    def _model_loaded(self) -> None:
        engine = self.engine
        self._update_status()
        if engine is not None and engine.model_state == "failed":
            self.notify(f"Semantic search is off: {engine.model_error}", severity="warning", timeout=10)
        self._broadcast()

    def _broadcast(self) -> None:
        self.query_one(DiagnosePane).engine_updated()
        self.query_one(FaqPane).engine_updated()
        self.query_one(JobsPane).engine_updated()
        self.query_one(ChatPane).engine_updated()

    def _update_status(self) -> None:
        engine = self.engine
        if engine is None:
            return
        n = len(engine.entries)
        status = {
            "loading": f"{n} entries · rules ready · model loading…",
            "ready": f"{n} entries · rules + semantic ready",
            "off": f"{n} entries · rules only",
            "failed": f"{n} entries · rules only (model failed)",
        }[engine.model_state]
        self._set_status(status)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification as plain text: messages carry file names, findings' titles and copied lines
        (input, never markup); control sequences are stripped."""
        super().notify(
            terminal_safe(message), title=terminal_safe(title), severity=severity, timeout=timeout, markup=False
        )

    def _set_status(self, status: str) -> None:
        self.sub_title = f"{self._source} · {status}" if self._source else status

    @property
    def status(self) -> str:
        """What the title bar says about the engine (rules, model)."""
        return self.sub_title

    # -- actions

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_theme(self) -> None:
        dark, light = self.settings.dark_theme, self.settings.light_theme
        self.theme = light if self.theme == dark else dark

    def action_show_tab(self, tab: str) -> None:
        self._switch_tab(tab)
        self.call_after_refresh(self._focus_tab, tab)

    def _switch_tab(self, tab: str) -> None:
        # Let go of the focus first: a focused widget in the tab being hidden would otherwise hand the
        # focus on when its Hide event arrives, after the new tab's widget has taken it.
        self.screen.set_focus(None)
        self.query_one(TabbedContent).active = tab

    def _focus_tab(self, tab: str) -> None:
        selector = _TAB_FOCUS.get(tab)
        if selector:
            widgets = self.query(selector)
            if widgets:
                widgets.first().focus()

    def open_entry(self, entry_id: str) -> None:
        """Show one FAQ entry (from a diagnosis or an incident)."""
        self._switch_tab("faq")
        self.call_after_refresh(self.query_one(FaqPane).open_entry, entry_id)
