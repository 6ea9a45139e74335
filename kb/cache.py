"""Where verl-doctor keeps what it can rebuild: compiled pattern databases, the parsed corpus, indexes.

Everything here is a cache: a missing, stale or unreadable file is rebuilt, never an error.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$VERL_DOCTOR_CACHE, else $XDG_CACHE_HOME/verl-doctor (~/.cache/verl-doctor)."""
    base = os.environ.get("VERL_DOCTOR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "verl-doctor"
    )
    return Path(base)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file, so readers never see half of it.
    Failing to write a cache is not an error: the next run rebuilds it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:
        pass


def read_private(path: Path) -> bytes | None:
    """The bytes of a cache file only this user can have written (it may hold a pickle), else None."""
    try:
        with path.open("rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
            return fh.read()
    except OSError:
        return None


def prune(directory: Path, pattern: str, keep: int) -> None:
    """Delete all but the ``keep`` most recently written files matching ``pattern`` in ``directory``
    (caches keyed on content would otherwise grow with every edit)."""
    try:
        found = sorted(directory.glob(pattern), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in found[keep:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
