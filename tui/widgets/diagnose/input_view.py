"""A read-only view of the diagnosed input with the evidence lines marked; cheap for large pastes.

It renders line by line (Textual's line API), so a 100 000-line paste costs what the screen shows.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kb.render_text import terminal_safe

#: Characters of a line that are drawn; longer lines are cut (the engine matches on 8 KB anyway).
MAX_DRAWN = 1000


class InputView(ScrollView, can_focus=True):
    """The pasted text, numbered, with the current match's evidence lines marked."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "input-view--gutter",
        "input-view--mark",
        "input-view--mark-gutter",
        "input-view--cursor",
    }

    DEFAULT_CSS = """
    InputView {
        background: $surface;
        & > .input-view--gutter { color: $text-muted; }
        & > .input-view--mark { background: $warning 30%; }
        & > .input-view--mark-gutter { color: $warning; text-style: bold; }
        & > .input-view--cursor { background: $primary 50%; text-style: bold; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "next_evidence", "Next evidence"),
        Binding("p", "previous_evidence", "Prev evidence"),
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor_to(1)", "First line", show=False),
        Binding("end", "cursor_to(-1)", "Last line", show=False),
    ]

    cursor_line: reactive[int] = reactive(1)
    """1-based line the cursor is on."""

    class Jumped(Message):
        """The cursor moved to an evidence line (``line_no``)."""

        def __init__(self, line_no: int) -> None:
            self.line_no = line_no
            super().__init__()

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._lines: list[str] = []
        self._marks: list[int] = []
        self._mark_set: set[int] = set()
        self._gutter = 2

    # -- data

    @property
    def line_count(self) -> int:
        return len(self._lines)

    @property
    def marked_lines(self) -> list[int]:
        """The evidence lines currently marked (1-based, ascending)."""
        return list(self._marks)

    def set_text(self, text: str) -> None:
        self._lines = [terminal_safe(line.expandtabs(4)[:MAX_DRAWN]) for line in text.splitlines()]
        self._gutter = len(str(max(1, len(self._lines)))) + 2
        width = max((len(line) for line in self._lines), default=0) + self._gutter + 1
        self.virtual_size = Size(width, len(self._lines))
        self._marks = []
        self._mark_set = set()
        self.cursor_line = 1
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    def set_marks(self, line_nos: list[int], jump: bool = True) -> None:
        """Mark these lines; with ``jump``, move to the first of them."""
        self._marks = sorted({n for n in line_nos if 1 <= n <= len(self._lines)})
        self._mark_set = set(self._marks)
        self.refresh()
        if jump and self._marks:
            self.jump_to(self._marks[0])

    def jump_to(self, line_no: int, center: bool = True) -> None:
        """Move the cursor to ``line_no`` and scroll it into view (into the middle with ``center``)."""
        if not self._lines:
            return
        self.cursor_line = max(1, min(line_no, len(self._lines)))
        region = Region(int(self.scroll_offset.x), self.cursor_line - 1, 1, 1)
        self.scroll_to_region(region, animate=False, center=center, force=True, immediate=True)

    def watch_cursor_line(self, old: int, new: int) -> None:
        self.refresh_line(old)
        self.refresh_line(new)

    def refresh_line(self, line_no: int) -> None:
        y = line_no - 1 - int(self.scroll_offset.y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    # -- actions

    def action_next_evidence(self) -> None:
        after = [n for n in self._marks if n > self.cursor_line]
        target = after[0] if after else (self._marks[0] if self._marks else None)
        if target is not None:
            self.jump_to(target)
            self.post_message(self.Jumped(target))

    def action_previous_evidence(self) -> None:
        before = [n for n in self._marks if n < self.cursor_line]
        target = before[-1] if before else (self._marks[-1] if self._marks else None)
        if target is not None:
            self.jump_to(target)
            self.post_message(self.Jumped(target))

    def action_cursor(self, delta: int) -> None:
        self.jump_to(self.cursor_line + delta, center=False)

    def action_page(self, direction: int) -> None:
        self.jump_to(self.cursor_line + direction * max(1, self.size.height - 1), center=False)

    def action_cursor_to(self, line_no: int) -> None:
        self.jump_to(len(self._lines) if line_no < 0 else line_no, center=False)

    def on_click(self, event: events.Click) -> None:
        self.jump_to(event.y + int(self.scroll_offset.y) + 1, center=False)

    # -- rendering

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = y + int(scroll_y)
        width = self.size.width
        base = self.rich_style
        if index >= len(self._lines):
            return Strip.blank(width, base)
        line_no = index + 1
        marked = line_no in self._mark_set
        style = base
        if marked:
            style = style + self.get_component_rich_style("input-view--mark")
        if line_no == self.cursor_line and self.has_focus:
            style = style + self.get_component_rich_style("input-view--cursor")
        gutter_style: Style = self.get_component_rich_style(
            "input-view--mark-gutter" if marked else "input-view--gutter"
        )
        gutter = f"{'▶' if marked else ' '}{line_no:>{self._gutter - 2}} "
        text = self._lines[index]
        # The gutter keeps its own colour on the line's background (mark or cursor).
        gutter_fg = Style(color=gutter_style.color, bold=gutter_style.bold)
        segments = [Segment(gutter, style + gutter_fg), Segment(text, style)]
        strip = Strip(segments)
        return strip.crop_extend(int(scroll_x), int(scroll_x) + width, style)

    def on_focus(self) -> None:
        self.refresh_line(self.cursor_line)

    def on_blur(self) -> None:
        self.refresh_line(self.cursor_line)
