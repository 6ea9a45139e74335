"""The parsed-corpus cache: used when nothing changed, rebuilt on any change, never trusted blindly."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kb.corpus as corpus_module
from kb.corpus import load_corpus


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("VERL_DOCTOR_CACHE", str(path))
    return path


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The entry files parsed from source (not taken from the cache)."""
    seen: list[str] = []
    real = corpus_module.parse_entry

    def counting(path: Path, display: str | None = None) -> Any:
        seen.append(path.name)
        return real(path, display)

    monkeypatch.setattr(corpus_module, "parse_entry", counting)
    return seen


def _two_entries(make_corpus: Callable[..., Path], good_entry: Callable[[str, str], str]) -> Path:
    return make_corpus(
        {"ray/ray-register.md": good_entry("ray-register", "ray"), "data/data-x.md": good_entry("data-x", "data")}
    )


def test_second_load_comes_from_the_cache(cache: Path, parses: list[str], make_corpus: Any, good_entry: Any) -> None:
    root = _two_entries(make_corpus, good_entry)
    first = load_corpus(root)
    assert sorted(parses) == ["data-x.md", "ray-register.md"] and list(cache.glob("corpus-*.pickle"))
    parses.clear()
    second = load_corpus(root)
    assert parses == []
    assert second.entries == first.entries and second.fingerprint == first.fingerprint
    assert second.root == root


def test_any_change_to_an_entry_is_seen(cache: Path, parses: list[str], make_corpus: Any, good_entry: Any) -> None:
    root = _two_entries(make_corpus, good_entry)
    before = load_corpus(root)
    path = root / "ray" / "ray-register.md"
    text = path.read_text()
    # Same size, same modification time: only the content says it changed.
    stat = path.stat()
    path.write_text(text.replace("Workers fail to register.", "Workers fail to registe!."))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    parses.clear()
    after = load_corpus(root)
    assert sorted(parses) == ["data-x.md", "ray-register.md"]
    assert after.fingerprint != before.fingerprint
    assert "registe!" in after.get("ray-register").sections["What you see"]  # type: ignore[union-attr]


def test_a_corpus_with_problems_is_never_cached(cache: Path, make_corpus: Any, good_entry: Any) -> None:
    root = make_corpus({"ray/ray-register.md": good_entry("ray-register", "ray"), "ray/bad.md": "no front matter\n"})
    corpus = load_corpus(root)
    assert corpus.problems and not list(cache.glob("corpus-*.pickle"))
    assert load_corpus(root).problems == corpus.problems


@pytest.mark.parametrize("spoil", ["corrupt", "group-writable"])
def test_a_spoiled_cache_file_is_rebuilt(
    cache: Path, parses: list[str], make_corpus: Any, good_entry: Any, spoil: str
) -> None:
    root = _two_entries(make_corpus, good_entry)
    load_corpus(root)
    (cached,) = cache.glob("corpus-*.pickle")
    if spoil == "corrupt":
        cached.write_bytes(b"not a pickle")
    else:
        cached.chmod(0o666)  # another user could have written it: never unpickle that
    parses.clear()
    corpus = load_corpus(root)
    assert sorted(parses) == ["data-x.md", "ray-register.md"] and len(corpus.entries) == 2
