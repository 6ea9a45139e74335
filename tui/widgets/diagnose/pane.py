"""The Diagnose tab: paste a traceback, submit, read the ranked diagnoses with their evidence."""

from __future__ import annotations

from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import ContentSwitcher, OptionList, TextArea

from kb.render_text import terminal_safe
from kb.result import Match, Result
from tui.engine import DoctorEngine, UsesEngine
from tui.safe_text import fill, lines
from tui.widgets.diagnose.input_view import InputView
from tui.widgets.diagnose.results import MatchDetail, ResultsList, copy_text, fix_blocks

PLACEHOLDER = (
    "Paste a traceback, a log excerpt or a question here, then press Ctrl+D to diagnose.\n"
    "(Ctrl+Enter works too where the terminal reports it.)"
)


class PasteArea(TextArea):
    """Where the input goes; bracketed pastes of any length land here in one piece. Terminal control
    sequences (a colored log's ANSI codes) are stripped on the way in: they would corrupt the screen."""

    DEFAULT_CSS = """
    PasteArea { height: 1fr; border: round $foreground 25%; }
    PasteArea:focus { border: round $accent; }
    """

    async def _on_paste(self, event: events.Paste) -> None:
        # Textual runs this before TextArea's own handler (which inserts the text): clean it for that one.
        event.text = terminal_safe(event.text)

    def load_text(self, text: str) -> None:
        super().load_text(terminal_safe(text))


class DiagnosePane(UsesEngine, Vertical):
    """Input on the left (editable, or the read-only marked view), diagnoses and their detail on the right."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+d,ctrl+enter", "diagnose", "Diagnose", priority=True),
        Binding("ctrl+e", "edit", "Edit input"),
        Binding("ctrl+g", "goto_line", "Go to line"),
        Binding("c", "copy_overrides", "Copy fix"),
        Binding("a", "next_fix", "Next fix"),
        Binding("o", "open_entry", "Open entry"),
    ]

    DEFAULT_CSS = """
    DiagnosePane {
        #input-column { width: 1fr; }
        #input-view { height: 1fr; border: round $foreground 25%; }
        #input-view:focus { border: round $accent; }
        #results-column { width: 1fr; }
        ResultsList { border: round $foreground 25%; }
        ResultsList:focus { border: round $accent; }
        MatchDetail { border: round $foreground 25%; }
        MatchDetail:focus { border: round $accent; }
    }
    """

    def __init__(self, *, top: int = 5, id: str | None = None) -> None:
        super().__init__(id=id)
        self.top = top
        self.result: Result | None = None
        self.stage = ""
        self._text: str | None = None
        self._pending: str | None = None
        self._generation = 0
        self.fix_choice = 0  # the fix block `c` copies: 0 the main fix, then each alternative (`a` moves on)
        self._fix_for: str | None = None

    def compose(self) -> ComposeResult:
        with Horizontal():
            with ContentSwitcher(id="input-column", initial="paste"):
                area = PasteArea(id="paste", soft_wrap=False, show_line_numbers=False, tab_behavior="focus")
                area.placeholder = PLACEHOLDER
                area.border_title = "Input"
                yield area
                view = InputView(id="input-view")
                view.border_title = "Input (Ctrl+E edits)"
                yield view
            with Vertical(id="results-column"):
                results = ResultsList(id="results")
                results.border_title = "Diagnoses"
                yield results
                detail = MatchDetail(id="detail")
                detail.border_title = "Detail"
                yield detail

    def on_mount(self) -> None:
        self.query_one(MatchDetail).show_hint(
            "Paste on the left and press [b]Ctrl+D[/b].\n\n"
            "F1 shows every key; F3 browses the FAQ; F4 scans a job directory."
        )

    # -- the engine

    def engine_updated(self) -> None:
        """Called by the app when the rules are loaded and again when the model is ready."""
        engine = self.engine
        if engine is None:
            return
        if self._pending is not None:
            text, self._pending = self._pending, None
            self._start(text)
        elif self._text is not None and engine.model_ready and self.stage != "rules + semantic":
            self._start(self._text)

    # -- diagnosing

    def diagnose_text(self, text: str) -> None:
        """Put ``text`` in the paste area and diagnose it (what opening with FILE or stdin does)."""
        self.query_one(PasteArea).load_text(text)
        self.action_diagnose()

    def action_diagnose(self) -> None:
        text = self.query_one(PasteArea).text
        if not text.strip():
            self.notify("Nothing to diagnose: paste a traceback, a log excerpt or a question.", severity="warning")
            return
        self._text = text
        view = self.query_one(InputView)
        view.set_text(text)
        self.query_one(ContentSwitcher).current = "input-view"
        view.focus()  # the results list takes the focus once it has something in it
        results = self.query_one(ResultsList)
        if self.engine is None:
            self._pending = text
            results.border_subtitle = "waiting for the rules to load…"
            return
        self._start(text)

    def _start(self, text: str) -> None:
        self._generation += 1
        engine = self.engine
        assert engine is not None
        self.query_one(ResultsList).border_subtitle = "diagnosing…"
        self._diagnose(engine, text, self._generation, self.top)

    @work(thread=True, exclusive=True, group="diagnose")
    def _diagnose(self, engine: DoctorEngine, text: str, generation: int, top: int) -> None:
        result = engine.diagnose(text, top=top, semantic=False)
        semantic_next = engine.model_ready
        self.app.call_from_thread(self._show, result, generation, "rules", semantic_next)
        if semantic_next:
            result = engine.diagnose(text, top=top, semantic=True)
            self.app.call_from_thread(self._show, result, generation, "rules + semantic", False)

    def _show(self, result: Result, generation: int, stage: str, more: bool) -> None:
        if generation != self._generation:
            return
        keep = self.current_match.id if self.current_match else None
        self.result = result
        self.stage = stage
        results = self.query_one(ResultsList)
        results.border_subtitle = stage + (" · semantic running…" if more else "")
        if self.engine is not None and self.engine.model_state == "loading":
            results.border_subtitle = stage + " · model loading…"
        results.show(result, keep=keep)
        if isinstance(self.app.focused, InputView) and result.matches:
            results.focus()
        self._show_current()

    @property
    def current_match(self) -> Match | None:
        if self.result is None or not self.result.matches:
            return None
        index = self.query_one(ResultsList).highlighted
        if index is None or index >= len(self.result.matches):
            return None
        return self.result.matches[index]

    def _show_current(self) -> None:
        detail = self.query_one(MatchDetail)
        view = self.query_one(InputView)
        match = self.current_match
        if self.result is None:
            return
        if match is None:
            notes = [fill("• $note", note=n) for n in self.result.notes]
            hint = "No known problem matches this input well enough."
            if self.engine is not None and self.engine.model_state == "loading":
                hint = "The rules found nothing; semantic search runs as soon as the embedding model has loaded."
            detail.show_hint(lines([hint, "", *notes]))
            view.set_marks([])
            return
        if match.id != self._fix_for:
            self._fix_for, self.fix_choice = match.id, 0
        detail.show(match, self.result, self.fix_choice)
        view.set_marks([ev.line_no for ev in match.evidence if ev.line_no])

    @on(OptionList.OptionHighlighted, "#results")
    def _highlighted(self) -> None:
        self._show_current()

    @on(OptionList.OptionSelected, "#results")
    def _selected(self) -> None:
        self.query_one(MatchDetail).focus()

    # -- other actions

    def action_edit(self) -> None:
        self.query_one(ContentSwitcher).current = "paste"
        self.query_one(PasteArea).focus()

    def action_next_fix(self) -> None:
        """Choose the next fix block (the main fix, then each alternative) for `c` to copy."""
        match = self.current_match
        count = len(fix_blocks(match)) if match is not None else 0
        if match is None or count < 2 or self.result is None:
            self.notify("This diagnosis has one fix only.", severity="information")
            return
        self.fix_choice = (self.fix_choice + 1) % count
        self.query_one(MatchDetail).show(match, self.result, self.fix_choice)

    def action_copy_overrides(self) -> None:
        match = self.current_match
        text = copy_text(match, self.fix_choice) if match is not None else ""
        if not text:
            self.notify("No overrides to copy for this diagnosis.", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied: {text}", title="Fix copied (OSC 52)")

    def action_open_entry(self) -> None:
        match = self.current_match
        opener = getattr(self.app, "open_entry", None)
        if match is not None and opener is not None:
            opener(match.id)

    def action_goto_line(self) -> None:
        from tui.screens.goto import GotoLineScreen

        view = self.query_one(InputView)
        if self._text is None:
            self.notify("Diagnose something first.", severity="warning")
            return

        def go(line_no: int | None) -> None:
            if line_no is not None:
                self.query_one(ContentSwitcher).current = "input-view"
                view.jump_to(line_no)
                view.focus()

        self.app.push_screen(GotoLineScreen(view.line_count), go)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        focused = self.app.focused
        if action in ("copy_overrides", "open_entry", "next_fix") and isinstance(focused, TextArea):
            return False  # the key types a 'c' there
        return not (action == "edit" and self.query_one(ContentSwitcher).current == "paste")
