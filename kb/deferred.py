"""A value built in a background thread: start it early, ask for it when it is needed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Deferred(Generic[T]):
    """``build`` runs once, in a daemon thread from :meth:`start` (or inline from :meth:`result` when
    nobody started it). Whatever it raises, ``SystemExit`` included, is raised again by :meth:`result`
    in the caller's thread instead of vanishing with the thread."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._done = False
        self._value: T | None = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            self._value = self._build()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc
        self._done = True

    def start(self) -> None:
        with self._lock:
            if self._thread is None and not self._done:
                self._thread = threading.Thread(target=self._run, name="deferred-build", daemon=True)
                self._thread.start()

    def result(self) -> T:
        with self._lock:
            thread = self._thread
            if thread is None and not self._done:
                self._run()
        if thread is not None:
            thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
