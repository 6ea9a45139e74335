"""Text from the input (log lines, file names, titles taken from tracebacks) on screen as plain text.

Textual markup is for the layout only: every value that comes from the input is a template variable of
:func:`fill`, so a Hydra line such as ``Error executing job with overrides: ['a=1']`` is shown as written
and never parsed as markup (``textual.markup.escape`` does not cover Textual's own tag syntax). Control
sequences are stripped first, so raw ANSI in a log cannot restyle or move the screen.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.content import Content

from kb.render_text import terminal_safe


def plain(text: object) -> Content:
    """``text`` as plain content: no markup, no control sequences."""
    return Content(terminal_safe(str(text)))


def fill(template: str, **values: object) -> Content:
    """``template`` (Textual markup written here, with ``$name`` placeholders) with each value inserted as
    plain text; a value that is already :class:`Content` is inserted as it is."""
    return Content.from_markup(template, **{k: v if isinstance(v, Content) else plain(v) for k, v in values.items()})


def lines(parts: Iterable[Content | str]) -> Content:
    """Parts joined with newlines; a ``str`` part is layout markup with no input in it."""
    return Content("\n").join(p if isinstance(p, Content) else Content.from_markup(p) for p in parts)
