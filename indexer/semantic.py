"""Embeddings (the bundled all-MiniLM-L6-v2: ONNX for queries, sentence-transformers to build), a FAISS
index persisted in a cache directory keyed by a hash of corpus and model, and a BM25 index beside it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import pickle
import re
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from indexer import onnx_model
from indexer.onnx_model import DEFAULT_MODEL, model_path
from indexer.quiet import quiet_transformers
from kb.cache import cache_dir, read_private, write_atomically
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
    """The retriever: cosine similarity (an inner product of normalised vectors) plus BM25, over the entries.

    The vectors are persisted as a FAISS flat inner-product index and as a numpy array beside it, keyed by
    corpus and model. A query searches the few hundred of them exactly with one numpy product, which
    ranks as the FAISS index does (the same vectors, scores equal to float noise) without importing FAISS
    (0.05 s of CPU). The BM25 index is cached beside them."""

    def __init__(self, entries: Sequence[Entry], embedder: Embedder, fingerprint: str) -> None:
        self.ids = [e.id for e in entries]
        self.embedder = embedder
        docs = [entry_document(e) for e in entries]
        key = hashlib.sha256(f"{fingerprint}:{embedder.fingerprint}:{len(docs)}".encode()).hexdigest()[:16]
        self.path = cache_dir() / f"index-{key}"
        self.rebuilt = False
        vectors = self._load()
        if vectors is None:
            vectors = embedder.encode_documents(docs)
            self._save(vectors)
            self._save_faiss(vectors)
            self.rebuilt = True
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._bm25 = _BM25.cached(docs, self.path)

    def _load(self) -> np.ndarray | None:
        meta = self.path / "meta.json"
        if not meta.exists():
            return None
        try:
            if json.loads(meta.read_text())["ids"] != self.ids:
                return None
            try:
                vectors = np.load(self.path / "entries.npy", allow_pickle=False)
            except FileNotFoundError:
                vectors = self._from_faiss()
        except (OSError, ValueError, KeyError, RuntimeError):
            return None
        if vectors is None or vectors.ndim != 2 or vectors.shape[0] != len(self.ids):
            return None
        return vectors

    def _from_faiss(self) -> np.ndarray | None:
        """The vectors of an index written by an earlier release (a FAISS file), kept as they are: the
        same vectors without loading the model to embed every entry again."""
        if not (self.path / "entries.faiss").is_file():
            return None
        try:
            import faiss
        except ImportError:
            return None
        index = faiss.read_index(str(self.path / "entries.faiss"))
        vectors = np.asarray(index.reconstruct_n(0, index.ntotal), dtype=np.float32)
        self._save(vectors, meta=False)
        return vectors

    def _save(self, vectors: np.ndarray, meta: bool = True) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            partial = self.path / f"entries.{os.getpid()}.npy"
            np.save(partial, np.asarray(vectors, dtype=np.float32), allow_pickle=False)
            partial.replace(self.path / "entries.npy")  # atomic: a reader sees the old file or the new one
            if meta:
                (self.path / "meta.json").write_text(json.dumps({"ids": self.ids, "model": self.embedder.name}))
        except OSError:
            pass  # a read-only cache only costs a rebuild next time

    def _save_faiss(self, vectors: np.ndarray) -> None:
        """The same vectors as a FAISS flat inner-product index, written when the index is built (torch is
        loaded then anyway): what releases before the numpy search read from this directory."""
        try:
            import faiss
        except ImportError:
            return
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        # A read-only cache: the numpy file above is what queries read.
        with contextlib.suppress(OSError, RuntimeError):
            faiss.write_index(index, str(self.path / "entries.faiss"))

    def search(self, query: str, k: int = 10) -> list[tuple[str, float, str]]:
        if not query.strip():
            return []
        vec = self.embedder.encode([query])
        scores = self.vectors @ vec[0]
        # Best first, the lower index first among equal scores (as FAISS's flat index returned them).
        order = np.argsort(-scores, kind="stable")[: min(k, len(self.ids))]
        out: list[tuple[str, float, str]] = [(self.ids[i], float(max(0.0, scores[i])), "semantic") for i in order]
        out += [(self.ids[i], s, "lexical") for i, s in self._bm25.top(tokenize(query), k)]
        return out


#: Bump when the cached form of :class:`_BM25` changes.
_BM25_FORMAT = "bm25-flat-1"


class _BM25:
    """Okapi BM25 over the tokenised entry documents, scored as bm25s scores by default (Lucene's idf,
    Robertson's term-frequency normalisation), scaled to [0, 1] by the best. A few hundred documents need
    no sparse-matrix library, and importing one (scipy, through bm25s) cost a tenth of every cold query.

    The postings are three flat arrays (the documents of each token, their weights, where each token's
    run starts) so that the index pickles small and loads in a millisecond: building it took 40 ms of
    every cold query, tokenising the documents most of that."""

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
        self._tokens: dict[str, int] = {}
        starts = [0]
        where_parts: list[np.ndarray] = []
        weight_parts: list[np.ndarray] = []
        for token, row in postings.items():
            where = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            tf = np.fromiter(row.values(), dtype=np.float32, count=len(row))
            idf = math.log(1 + (self._n - len(row) + 0.5) / (len(row) + 0.5))
            norm = k1 * ((1 - b) + b * lengths[where] / average)
            self._tokens[token] = len(where_parts)
            where_parts.append(where)
            weight_parts.append((idf * tf / (norm + tf)).astype(np.float32))
            starts.append(starts[-1] + len(row))
        self._starts = np.array(starts, dtype=np.int64)
        self._where = np.concatenate(where_parts) if where_parts else np.zeros(0, dtype=np.int64)
        self._weights = np.concatenate(weight_parts) if weight_parts else np.zeros(0, dtype=np.float32)

    @classmethod
    def cached(cls, texts: list[str], directory: Path) -> _BM25:
        """The index of ``texts`` (tokenised here), from ``directory`` when it was built there from the same
        texts by the same code, else built and saved there."""
        digest = hashlib.sha256(_BM25_FORMAT.encode())
        for text in texts:
            digest.update(hashlib.sha256(text.encode()).digest())
        path = directory / f"bm25-{digest.hexdigest()[:16]}.pickle"
        data = read_private(path)
        if data is not None:
            try:
                loaded = pickle.loads(data)
                if isinstance(loaded, cls):
                    return loaded
            except Exception:  # a spoiled or foreign file: built again below
                pass
        index = cls([tokenize(t) for t in texts])
        write_atomically(path, pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))
        return index

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(self._n, dtype=np.float32)
        for token in query:  # a repeated query word counts again, as in bm25s
            row = self._tokens.get(token)
            if row is not None:
                start, end = self._starts[row], self._starts[row + 1]
                out[self._where[start:end]] += self._weights[start:end]
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
