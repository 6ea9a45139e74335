"""The diagnoser behind the app: corpus and rules first, the embedding model later.

No Textual here. Every call into the diagnoser goes through one lock, because the rule engine's
pattern scratch space and the embedding model are not meant to be used by two threads at once; the
model itself loads outside the lock, so rule-based diagnoses keep working while it loads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

from kb.ask import AskAnswer, ChatMessage
from kb.corpus import Corpus
from kb.engine import Diagnoser
from kb.entry import Entry
from kb.result import Result
from kb.retriever import Retriever
from kb.search import SearchHit, search_entries

ModelState = Literal["off", "loading", "ready", "failed"]


class DoctorEngine:
    """A diagnoser shared by the tabs, safe to call from worker threads."""

    def __init__(self, diagnoser: Diagnoser, semantic: bool = True) -> None:
        self.diagnoser = diagnoser
        self.model_state: ModelState = "loading" if semantic else "off"
        self.model_error: str | None = None
        self._lock = threading.RLock()
        # The same corpus and compiled rules without a retriever: what the FAQ search uses until the
        # model is ready, so that a search never loads the model on the calling thread.
        self._no_model = diagnoser.without_retriever()
        self._scan_diagnoser: Diagnoser | None = None
        self._scan_lock = threading.Lock()

    @property
    def corpus(self) -> Corpus:
        return self.diagnoser.corpus

    @property
    def entries(self) -> dict[str, Entry]:
        return self.diagnoser.entries

    @property
    def model_ready(self) -> bool:
        return self.model_state == "ready"

    def load_model(self) -> ModelState:
        """Load the embedding model and its index (seconds to tens of seconds); call from a thread."""
        if self.model_state != "loading":
            return self.model_state
        try:
            retriever = self.diagnoser.retriever
        except Exception as exc:  # the app keeps working on rules; the status line says why
            self.model_error = f"{type(exc).__name__}: {exc}"
            self.model_state = "failed"
            return self.model_state
        self.model_state = "ready" if retriever is not None else "off"
        return self.model_state

    def scan_diagnoser(self) -> Diagnoser:
        """A diagnoser of its own (its own compiled rules) for job scans, so that a long scan never waits
        for, or blocks, the Diagnose tab; it shares the embedding model once that is loaded. Built on
        first use (about a second), in the calling thread."""
        with self._scan_lock:
            if self._scan_diagnoser is None:

                def shared() -> Retriever | None:
                    return self.diagnoser.retriever if self.model_ready else None

                # Diagnoser.retriever calls the factory again while it returns None, so the model is picked
                # up by the first scan after it has loaded.
                self._scan_diagnoser = Diagnoser(self.corpus, cast("Callable[[], Retriever]", shared))
            return self._scan_diagnoser

    def diagnose(self, text: str, top: int = 5, semantic: bool = True) -> Result:
        """Rules always; the semantic layer only when asked for and the model is loaded."""
        with self._lock:
            if semantic and self.model_ready:
                return self.diagnoser.diagnose(text, top=top, semantic=True)
            return self._no_model.diagnose(text, top=top, semantic=False)

    def search(self, query: str, k: int = 30) -> list[SearchHit]:
        """FAQ search: titles and words until the model is ready, then semantic and lexical ranks."""
        with self._lock:
            return search_entries(self.diagnoser if self.model_ready else self._no_model, query, k=k)

    def ask(self, messages: Sequence[ChatMessage]) -> AskAnswer:
        """Answer the conversation's last question from the entries (semantic once the model is ready)."""
        from kb.ask import ask

        with self._lock:
            return ask(self.diagnoser if self.model_ready else self._no_model, messages)


class UsesEngine:
    """For panes: the app's engine once its rules are loaded, else None (the app calls
    ``engine_updated`` on each pane when that changes)."""

    app: Any

    @property
    def engine(self) -> DoctorEngine | None:
        engine = getattr(self.app, "engine", None)
        return engine if isinstance(engine, DoctorEngine) else None
