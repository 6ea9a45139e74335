"""The help screen (F1 or ?): every key, by tab, and how to feed the app a file or a pipe."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Markdown

HELP = """\
# verl-doctor

Paste a verl traceback or log, press **Ctrl+D**, and read which known problem it is, why it happens,
the conditions, and the exact overrides for your verl version, with the lines that prove it.

## Everywhere

| key | does |
|---|---|
| F1, ? | this help |
| F2 / F3 / F4 / F5 | Diagnose / FAQ / Jobs / Chat tab |
| Enter (Chat) / Ctrl+L | send a question / start a new conversation |
| Ctrl+T | light or dark theme |
| Tab, Shift+Tab | next / previous area |
| Ctrl+P | command palette |
| Ctrl+Q | quit |

## Diagnose

| key | does |
|---|---|
| Ctrl+D (Ctrl+Enter) | diagnose what is in the input |
| Ctrl+E | edit the input again |
| ↑ ↓ in Diagnoses | choose a diagnosis; its evidence is marked in the input |
| n / p in the input | next / previous evidence line |
| Ctrl+G | go to a line of the input |
| c | copy the overrides (OSC 52: your terminal's clipboard, also over ssh; in tmux: `set -g set-clipboard on`) |
| a | choose the next fix block (the main fix, then each alternative, ▶ marks it) for c to copy |

Results from the rules show at once; once the embedding model has loaded (the title bar says
so), the input is diagnosed again with semantic search.

## FAQ

Type to search (titles, words, and semantic search once the model is ready); ↓ or Tab moves to the
entries, grouped by area; Enter opens one. Escape in the search box clears it.

## Jobs

Type a job's output directory (or one log file) and press Enter, or press Ctrl+B to browse: Enter
opens a directory, s scans the highlighted one. The scan runs in the background with its progress
under the path; the findings come worst first. ↑ ↓ shows each one (where, how often, the excerpt
with its evidence lines, the diagnosis); o opens its FAQ entry, c copies its overrides. f follows a
running job: what it writes from then on is read as it appears (through rotation and truncation) and
each new finding is listed and announced; f again stops. p preflights the job: the overrides Hydra
recorded in its `.hydra/overrides.yaml` checked the way verl checks them at start-up, with the fixes.

## Starting it

    verl-doctor tui                 # paste in the app
    verl-doctor tui error.log       # diagnose a file at once
    tail -300 run.log | verl-doctor tui

With a pipe, the text is read first and then the app reopens the terminal (/dev/tty) for the
keyboard, so it needs a terminal to run in. `--no-semantic` skips the embedding model.
"""


class HelpScreen(ModalScreen[None]):
    """Keys and usage."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,f1,question_mark", "dismiss", "Close help"),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%; border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as scroll:
            scroll.border_title = "Help"
            yield Markdown(HELP)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()
