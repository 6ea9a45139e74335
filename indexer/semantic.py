"""Embeddings (the bundled all-MiniLM-L6-v2: ONNX for queries, sentence-transformers to build), a FAISS
index persisted in a cache directory keyed by a hash of corpus and model, and a BM25 index beside it."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import threading
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from indexer import onnx_model
from indexer.onnx_model import DEFAULT_MODEL, model_path
from indexer.quiet import quiet_transformers
from kb.cache import cache_dir
from kb.entry import Entry
from kb.retriever import entry_document


class Embedder:
    """Encodes normalised vectors. Queries run the exported ONNX model when it is in the cache (no torch);
    sentence-transformers builds the index, stands in when the ONNX file is missing or broken, and exports
    it whenever it loads, so the next start is light."""

    def __init__(self, name: str = DEFAULT_MODEL, backend: Literal["auto", "torch"] = "auto") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self.name = name
        self.path = model_path(name)
        self.fingerprint = onnx_model.model_fingerprint(self.path)
        self._onnx = onnx_model.load(self.path) if backend == "auto" else None
        self._torch: Any = None
        self._recent: dict[str, np.ndarray] = {}  # one query is searched in the entries and the issue archive
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        if self._onnx is None:
            self._sentence_transformer()

    @property
    def backend(self) -> str:
        return "onnx" if self._onnx is not None else "torch"

    def _sentence_transformer(self) -> Any:
        with self._load_lock:
            if self._torch is None:
                quiet_transformers()  # only here: on the ONNX path transformers is never imported
                from sentence_transformers import SentenceTransformer

                self._torch = SentenceTransformer(self.path, device="cpu")
                if not onnx_model.onnx_path(self.path).is_file():
                    exported = onnx_model.export(self.path)
                    if exported is not None:
                        print(
                            f"verl-doctor: exported the embedding model to {exported} for torch-free queries",
                            file=sys.stderr,
                        )
            return self._torch

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """The index-building path: sentence-transformers itself, whatever answers queries."""
        vectors = self._sentence_transformer().encode(
            list(texts), normalize_embeddings=True, convert_to_numpy=True, batch_size=32
        )
        return np.asarray(vectors, dtype="float32")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        single = texts[0] if len(texts) == 1 else None
        if single is not None:
            with self._lock:
                hit = self._recent.get(single)
            if hit is not None:
                return hit
        out = self._onnx.encode(texts) if self._onnx is not None else self.encode_documents(texts)
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
        key = hashlib.sha256(f"{fingerprint}:{embedder.fingerprint}:{len(docs)}".encode()).hexdigest()[:16]
        self.path = cache_dir() / f"index-{key}"
        self.rebuilt = False
        index = self._load(faiss)
        if index is None:
            vectors = embedder.encode_documents(docs)
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
    """Okapi BM25 over the tokenised entry documents, scored as bm25s scores by default (Lucene's idf,
    Robertson's term-frequency normalisation), scaled to [0, 1] by the best. A few hundred documents need
    no sparse-matrix library, and importing one (scipy, through bm25s) cost a tenth of every cold query."""

    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        docs = [d or ["_"] for d in docs]
        self._n = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float32)
        average = float(lengths.mean()) if self._n else 1.0
        postings: dict[str, dict[int, int]] = {}
        for i, doc in enumerate(docs):
            for token in doc:
                row = postings.setdefault(token, {})
                row[i] = row.get(i, 0) + 1
        self._rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for token, row in postings.items():
            where = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            tf = np.fromiter(row.values(), dtype=np.float32, count=len(row))
            idf = math.log(1 + (self._n - len(row) + 0.5) / (len(row) + 0.5))
            norm = k1 * ((1 - b) + b * lengths[where] / average)
            self._rows[token] = (where, (idf * tf / (norm + tf)).astype(np.float32))

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(self._n, dtype=np.float32)
        for token in query:  # a repeated query word counts again, as in bm25s
            row = self._rows.get(token)
            if row is not None:
                out[row[0]] += row[1]
        return out

    def top(self, query: list[str], k: int) -> list[tuple[int, float]]:
        if not query:
            return []
        scores = self.scores(query)
        order = np.argsort(-scores, kind="stable")[: min(k, self._n)]
        best = float(scores[order[0]]) if len(order) else 0.0
        if best <= 0:
            return []
        return [(int(i), float(scores[i]) / best) for i in order if scores[i] > 0]
