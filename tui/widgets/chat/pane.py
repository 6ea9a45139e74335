"""The Chat tab: questions in words, answered from the entries (kb.ask), with follow-ups using earlier turns."""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Markdown, Static

from kb.ask import AskAnswer, ChatMessage
from tui.engine import UsesEngine


class ChatPane(UsesEngine, Vertical):
    """A conversation: each answer cites its entries; 'I'm on 0.5' or 'and on arm64?' refine the last topic."""

    DEFAULT_CSS = """
    ChatPane { height: 1fr; }
    ChatPane #chat-log { height: 1fr; border: round $foreground 25%; padding: 0 1; }
    ChatPane .chat-user { color: $accent; text-style: bold; margin: 1 0 0 0; }
    ChatPane .chat-answer { margin: 0 0 0 2; }
    ChatPane .chat-note { color: $text-muted; margin: 0 0 0 2; }
    ChatPane #chat-input { dock: bottom; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+l", "clear", "New chat")]

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[ChatMessage] = []
        self.last_answer: AskAnswer | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="chat-log"):
            yield Static(
                "Ask about verl in words, e.g. [i]how do train, mini and micro batch sizes relate?[/i] "
                "Follow-ups such as [i]I'm on 0.5[/i] use the earlier turns. Ctrl+L starts over.",
                classes="chat-note",
            )
        yield Input(placeholder="Ask about verl… (Enter sends)", id="chat-input")

    def engine_updated(self) -> None:
        """Called by the app when the rules or the model become ready."""

    @on(Input.Submitted, "#chat-input")
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        event.input.value = ""
        self.messages.append(ChatMessage(role="user", content=text))
        log = self.query_one("#chat-log", VerticalScroll)
        log.mount(Static(f"> {text}", classes="chat-user", markup=False))
        if self.engine is None:
            log.mount(Static("The corpus is still loading; ask again in a moment.", classes="chat-note"))
            self.messages.pop()
            return
        event.input.disabled = True
        self._ask(list(self.messages))

    @work(thread=True, exclusive=True, group="chat")
    def _ask(self, messages: list[ChatMessage]) -> None:
        engine = self.engine
        assert engine is not None
        try:
            answer = engine.ask(messages)
        except ValueError as exc:
            self.app.call_from_thread(self._show_error, str(exc))
            return
        self.app.call_from_thread(self._show_answer, answer)

    def _show_answer(self, answer: AskAnswer) -> None:
        self.last_answer = answer
        self.messages.append(ChatMessage(role="assistant", content=answer.answer))
        log = self.query_one("#chat-log", VerticalScroll)
        log.mount(Markdown(answer.answer, classes="chat-answer"))
        if answer.abstained:
            log.mount(Static("No entry fits well enough; the closest are listed above.", classes="chat-note"))
        self._ready()
        log.scroll_end(animate=False)

    def _show_error(self, message: str) -> None:
        self.messages.pop()
        self.query_one("#chat-log", VerticalScroll).mount(Static(message, classes="chat-note", markup=False))
        self._ready()

    def _ready(self) -> None:
        field = self.query_one("#chat-input", Input)
        field.disabled = False
        field.focus()

    def action_clear(self) -> None:
        self.messages.clear()
        self.last_answer = None
        log = self.query_one("#chat-log", VerticalScroll)
        for child in list(log.children)[1:]:
            child.remove()
