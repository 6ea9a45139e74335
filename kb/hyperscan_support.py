"""Hyperscan when it is installed (it ships wheels for Linux x86_64 and aarch64 only), and the
per-thread scratch space every scan needs."""

from __future__ import annotations

import threading
from typing import Any

hs: Any
try:
    import hyperscan as hs
except ImportError:  # platforms without the wheel (tests/test_without_hyperscan.py runs this path)
    hs = None

_local = threading.local()


def thread_scratch(db: Any) -> Any:
    """Hyperscan scratch space for this thread: one scratch must never serve two scans at once."""
    cache: dict[int, tuple[Any, Any]] = _local.__dict__.setdefault("scratch", {})
    held = cache.get(id(db))
    if held is None or held[0] is not db:
        held = (db, hs.Scratch(db))
        cache[id(db)] = held
    return held[1]
