"""Go to a line of the diagnosed input."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.validation import Integer
from textual.widgets import Input, Label


class GotoLineScreen(ModalScreen[int | None]):
    """Asks for a line number; dismisses with it (or None on Escape)."""

    AUTO_FOCUS = "Input"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]

    DEFAULT_CSS = """
    GotoLineScreen { align: center middle; }
    GotoLineScreen > Vertical {
        width: 40; height: auto; padding: 0 1; border: round $accent; background: $surface;
    }
    """

    def __init__(self, line_count: int) -> None:
        super().__init__()
        self.line_count = max(1, line_count)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Go to line (1-{self.line_count}):")
            yield Input(
                placeholder="line number", type="integer", validators=[Integer(minimum=1, maximum=self.line_count)]
            )

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        if event.validation_result is not None and not event.validation_result.is_valid:
            self.notify(f"A line between 1 and {self.line_count}, please.", severity="warning")
            return
        self.dismiss(int(event.value))
