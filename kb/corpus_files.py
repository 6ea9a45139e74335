"""The corpus as files: which ones are entries, and one digest of their bytes.

Kept apart from :mod:`kb.corpus` so that start-up paths (the parsed-corpus cache, the scanner's pattern
set) can tell whether anything changed without importing the parser and its models.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path


def iter_entry_files(root: Path) -> Iterator[Path]:
    """Entry files: Markdown under an area folder (a README at the top is documentation)."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        if Path(dirpath) == root:
            continue
        for name in sorted(filenames):
            if name.endswith(".md") and name.lower() != "readme.md":
                yield Path(dirpath) / name


def corpus_digest(
    root: Path, files: Iterable[Path] | None = None, code: Iterable[Path] = (), salt: bytes = b""
) -> str | None:
    """A hash of every entry file (name and bytes) under ``root`` plus the ``code`` that interprets
    them; None when a file cannot be read. Content, not modification times: an edit within the
    file system's timestamp granularity must still count."""
    digest = hashlib.sha256(salt + str(root.resolve()).encode())
    try:
        for path in code:
            digest.update(path.read_bytes())
        for path in files if files is not None else iter_entry_files(root):
            raw = path.read_bytes()
            digest.update(f"\0{path.relative_to(root)}\0{len(raw)}\0".encode())
            digest.update(raw)
    except (OSError, ValueError):
        return None
    return digest.hexdigest()[:24]


def default_corpus_dir() -> Path:
    """The corpus to use: $VERL_DOCTOR_CORPUS, else the one bundled with the package."""
    env = os.environ.get("VERL_DOCTOR_CORPUS")
    if env:
        return Path(env)
    in_repo = Path(__file__).resolve().parent.parent / "corpus"  # a checkout or an editable install
    if in_repo.is_dir():
        return in_repo
    return Path(__file__).resolve().parent / "bundled_corpus"  # a wheel (see setup.py)
