"""The FAQ tab: the entries by area, search as you type, an entry rendered from its Markdown body."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Input, Markdown, Tree

from kb.entry import AREAS, Entry
from kb.render_text import overrides_by_version
from kb.search import SearchHit
from tui.engine import DoctorEngine, UsesEngine


def entry_markdown(entry: Entry) -> str:
    """An entry as one Markdown document: title, facts, the fix per verl range, the body, sources."""
    m = entry.meta
    out = [f"# {m.title}", "", f"`{m.id}` · {m.area} · verl `{m.verl}`", ""]
    rows = overrides_by_version(entry, None)
    if rows or m.fix.actions:
        out += ["## Fix at a glance", ""]
    if rows:
        out += ["| verl | override |", "|---|---|"]
        out += [f"| `{spec}` | `{line}` |" for spec, line in rows]
        out.append("")
    out += [f"- {a}" for a in m.fix.actions]
    if m.fix.actions:
        out.append("")
    for title, text in entry.sections.items():
        out += [f"## {title}", "", text.strip(), ""]
    if m.sources:
        out += ["## Sources", ""] + [f"- <{s}>" if s.startswith("http") else f"- {s}" for s in m.sources]
    return "\n".join(out)


class EntryTree(Tree[str]):
    """Entries by area (or the search hits, best first); a leaf's data is the entry id."""

    DEFAULT_CSS = """
    EntryTree { height: 1fr; border: round $foreground 25%; }
    EntryTree:focus { border: round $accent; }
    """

    def show_areas(self, entries: dict[str, Entry]) -> None:
        self.clear()
        by_area: dict[str, list[Entry]] = {}
        for e in entries.values():
            by_area.setdefault(e.area, []).append(e)
        for area in sorted(by_area, key=lambda a: (AREAS.index(a) if a in AREAS else len(AREAS), a)):
            group = sorted(by_area[area], key=lambda e: e.title.lower())
            node = self.root.add(Text.assemble(area, (f" ({len(group)})", "dim")), expand=False)
            for e in group:
                node.add_leaf(Text(e.title), data=e.id)
        self.border_subtitle = f"{len(entries)} entries"

    def show_hits(self, hits: list[SearchHit]) -> None:
        self.clear()
        for h in hits:
            self.root.add_leaf(Text.assemble(h.title, (f"  {h.area}", "dim")), data=h.id)
        self.border_subtitle = f"{len(hits)} found" if hits else "nothing found"
        self.cursor_line = 0

    def leaf_ids(self) -> list[str]:
        """Every entry id shown (in areas, expanded or not), in order."""
        out: list[str] = []

        def walk(node: object) -> None:
            for child in getattr(node, "children", []):
                if child.data is not None:
                    out.append(child.data)
                walk(child)

        walk(self.root)
        return out


class EntryView(VerticalScroll, can_focus=True):
    """One entry, rendered from its Markdown."""

    DEFAULT_CSS = """
    EntryView { height: 1fr; border: round $foreground 25%; padding: 0 1; }
    EntryView:focus { border: round $accent; }
    EntryView > Markdown { margin: 0; padding: 0; }
    """

    def compose(self) -> ComposeResult:
        yield Markdown("Choose an entry on the left (Enter opens it), or type in the search box.", id="entry-markdown")


class FaqPane(UsesEngine, Horizontal):
    """Search box and entry tree on the left, the open entry on the right."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+f", "focus_search", "Search"),
    ]

    DEFAULT_CSS = """
    FaqPane {
        #faq-left { width: 2fr; min-width: 30; }
        #faq-search { border: round $foreground 25%; }
        #faq-search:focus { border: round $accent; }
        EntryView { width: 3fr; }
    }
    """

    def __init__(self, *, search_delay: float = 0.15, id: str | None = None) -> None:
        super().__init__(id=id)
        self.search_delay = search_delay
        self.current_id: str | None = None
        self._timer: Timer | None = None
        self._generation = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="faq-left"):
            yield Input(placeholder="search: words, an error, a config key", id="faq-search")
            tree = EntryTree("entries", id="faq-tree")
            tree.show_root = False
            tree.border_title = "Entries"
            yield tree
        view = EntryView(id="entry-view")
        view.border_title = "Entry"
        yield view

    def engine_updated(self) -> None:
        """Rules loaded: fill the tree; model ready: search the current query again, semantically."""
        engine = self.engine
        if engine is None:
            return
        query = self.query_one("#faq-search", Input).value
        if query.strip():
            self._search_now()
        else:
            self.query_one(EntryTree).show_areas(engine.entries)

    # -- search

    @on(Input.Changed, "#faq-search")
    def _changed(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.search_delay > 0:
            self._timer = self.set_timer(self.search_delay, self._search_now)
        else:
            self.call_later(self._search_now)

    @on(Input.Submitted, "#faq-search")
    def _submitted(self) -> None:
        self.query_one(EntryTree).focus()

    def _search_now(self) -> None:
        engine = self.engine
        if engine is None:
            return
        query = self.query_one("#faq-search", Input).value
        self._generation += 1
        if not query.strip():
            self.query_one(EntryTree).show_areas(engine.entries)
            return
        self._search(engine, query, self._generation)

    @work(thread=True, exclusive=True, group="faq-search")
    def _search(self, engine: DoctorEngine, query: str, generation: int) -> None:
        hits = engine.search(query, k=30)
        self.app.call_from_thread(self._show_hits, hits, generation)

    def _show_hits(self, hits: list[SearchHit], generation: int) -> None:
        if generation == self._generation:
            self.query_one(EntryTree).show_hits(hits)

    def on_key(self, event: events.Key) -> None:
        key = event.key
        search = self.query_one("#faq-search", Input)
        if key == "down" and search.has_focus:
            self.query_one(EntryTree).focus()
        elif key == "escape" and search.has_focus and search.value:
            search.value = ""

    def action_focus_search(self) -> None:
        self.query_one("#faq-search", Input).focus()

    # -- entries

    @on(Tree.NodeSelected, "#faq-tree")
    def _selected(self, event: Tree.NodeSelected[str]) -> None:
        if event.node.data is not None:
            self.open_entry(event.node.data)

    def open_entry(self, entry_id: str, focus: bool = True) -> None:
        engine = self.engine
        entry = engine.entries.get(entry_id) if engine else None
        if entry is None:
            self.notify(f"No entry {entry_id!r}.", severity="error")
            return
        self.current_id = entry_id
        view = self.query_one(EntryView)
        view.border_title = entry.id
        self.query_one("#entry-markdown", Markdown).update(entry_markdown(entry))
        view.scroll_home(animate=False)
        if focus:
            view.focus()
