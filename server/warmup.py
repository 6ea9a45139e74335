"""Loading the embedding model and index beside a running server, and what /healthz says of it."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Literal

from fastapi import FastAPI

ModelState = Literal["loading", "ready", "off", "failed"]


@dataclass
class ModelLoad:
    state: ModelState
    error: str | None = None

    def start(self, app: FastAPI) -> None:
        """Load in a daemon thread: the server answers /healthz (and rules-decided requests wait only for
        the model when they need it) from its first second."""
        threading.Thread(target=self._load, args=(app,), name="load-model", daemon=True).start()

    def _load(self, app: FastAPI) -> None:
        diagnoser = app.state.diagnoser
        try:
            retriever = diagnoser.retriever
        except Exception as exc:  # the server keeps answering from the rules; /healthz says why
            self.error = f"{type(exc).__name__}: {exc}"
            self.state = "failed"
            app.state.diagnoser = diagnoser.without_retriever()
            print(f"warning: the embedding model did not load ({self.error}); answering from rules", file=sys.stderr)
            return
        self.state = "ready" if retriever is not None else "off"
