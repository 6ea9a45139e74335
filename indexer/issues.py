"""The issue archive's own index: FAISS over embedded issues plus BM25, in the cache directory.

Layout under ``cache_dir()/issues/``:

* ``<content hash>/issues.json`` - the normalised issues of one imported export;
* ``<content hash>-<model hash>/issues.faiss`` - their vectors for one embedding model;
* ``active.json`` - which export ``match``, ``ask`` and the API use (the last one imported).

Lexical search needs no model, so a diagnosis the rules decide still lists similar issues without
importing torch; semantic search joins in once the embedding model is loaded anyway.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kb.cache import cache_dir
from kb.issues import Issue, issue_document, issue_lexical_text, parse_export
from kb.result import SimilarIssue

if TYPE_CHECKING:  # the embedding side (numpy, the model) loads only when an archive is searched
    from indexer.semantic import Embedder

#: Floors below which an issue is not shown: fused (semantic + lexical) and lexical only.
SEMANTIC_FLOOR = 0.50
LEXICAL_FLOOR = 0.55


class ArchiveInfo(BaseModel):
    key: str
    source: str
    issues: int
    imported: float
    path: str


def archive_root() -> Path:
    return cache_dir() / "issues"


def _model_key(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:8]


class IssueIndex:
    """Similar-issue search over one archive: FAISS (cosine) and BM25, with an absolute lexical score."""

    def __init__(
        self, issues: Sequence[Issue], key: str, embedder: Callable[[], Embedder | None] | None = None
    ) -> None:
        import bm25s

        from indexer.quiet import quiet_bm25s

        quiet_bm25s()

        from indexer.semantic import tokenize

        self.issues = list(issues)
        self.key = key
        self._embedder = embedder
        self._faiss: Any = None
        self._faiss_failed = False
        docs = [tokenize(issue_lexical_text(i)) for i in self.issues]
        self._doc_sets = [set(d) for d in docs]
        df: Counter[str] = Counter()
        for d in self._doc_sets:
            df.update(d)
        n = len(docs)
        self._idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self._default_idf = math.log(1 + (n + 0.5) / 0.5)
        self._bm25 = bm25s.BM25()
        self._bm25.index([d or ["_"] for d in docs], show_progress=False)

    # ------------------------------------------------------------------ building and loading

    def vectors_path(self, model_name: str) -> Path:
        return archive_root() / f"{self.key}-{_model_key(model_name)}" / "issues.faiss"

    def build_vectors(self, embedder: Embedder) -> Any:
        """Embed every issue (or load the vectors cached for this export and model)."""
        import faiss

        path = self.vectors_path(embedder.name)
        if path.exists():
            try:
                index = faiss.read_index(str(path))
                if index.ntotal == len(self.issues):
                    self._faiss = index
                    return index
            except RuntimeError:
                pass
        vectors = embedder.encode([issue_document(i) for i in self.issues])
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            faiss.write_index(index, str(path))
        except OSError:
            pass  # a read-only cache only costs embedding again next time
        self._faiss = index
        return index

    def _vectors(self) -> tuple[Any, Embedder] | None:
        if self._embedder is None or self._faiss_failed:
            return None
        embedder = self._embedder()
        if embedder is None:
            return None
        if self._faiss is None:
            try:
                self.build_vectors(embedder)
            except (OSError, RuntimeError, ValueError):
                self._faiss_failed = True
                return None
        return self._faiss, embedder

    # ------------------------------------------------------------------ search

    def coverage(self, query_tokens: set[str], i: int) -> float:
        """The idf-weighted share of the query's words that the issue contains (an absolute lexical score)."""
        if not query_tokens:
            return 0.0
        weights = {t: self._idf.get(t, self._default_idf) for t in query_tokens}
        total = sum(weights.values())
        return sum(w for t, w in weights.items() if t in self._doc_sets[i]) / total if total else 0.0

    def similar(self, query: str, k: int = 3, semantic: bool = True) -> list[SimilarIssue]:
        from indexer.semantic import tokenize

        query = query.strip()[:2000]
        tokens = tokenize(query)
        if not query or not tokens or not self.issues:
            return []
        q_set = set(tokens)
        pool = min(len(self.issues), max(k * 4, 10))
        results, _ = self._bm25.retrieve([tokens], k=pool, show_progress=False)
        cands: dict[int, float] = {int(i): 0.0 for i in results[0]}
        vectors = self._vectors() if semantic else None
        if vectors is not None:
            index, embedder = vectors
            scores, idx = index.search(embedder.encode([query]), pool)
            for s, i in zip(scores[0], idx[0], strict=False):
                if i >= 0:
                    cands[int(i)] = max(0.0, float(s))
        ranked: list[tuple[float, int]] = []
        for i, cos in cands.items():
            lex = self.coverage(q_set, i)
            if vectors is not None:
                score, floor = 0.7 * cos + 0.3 * lex, SEMANTIC_FLOOR
            else:
                score, floor = lex, LEXICAL_FLOOR
            if score >= floor:
                ranked.append((score, i))
        ranked.sort(key=lambda t: (-t[0], self.issues[t[1]].number))
        return [self.issues[i].summary(s) for s, i in ranked[:k]]


# ---------------------------------------------------------------------- the active archive


def import_export(path: Path, embedder: Embedder | None = None) -> tuple[ArchiveInfo, IssueIndex]:
    """Parse an export, store it, embed it (when an embedder is given) and make it the active archive."""
    data = path.read_bytes()
    issues = parse_export(data, str(path))
    key = hashlib.sha256(data).hexdigest()[:16]
    folder = archive_root() / key
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "issues.json").write_text(
        json.dumps([i.model_dump() for i in issues], ensure_ascii=False), encoding="utf-8"
    )
    index = IssueIndex(issues, key, (lambda: embedder) if embedder else None)
    if embedder is not None:
        index.build_vectors(embedder)
    info = ArchiveInfo(key=key, source=str(path.resolve()), issues=len(issues), imported=time.time(), path=str(folder))
    (archive_root() / "active.json").write_text(info.model_dump_json(), encoding="utf-8")
    return info, index


def active_info() -> ArchiveInfo | None:
    meta = archive_root() / "active.json"
    try:
        return ArchiveInfo.model_validate_json(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def load_active(embedder: Callable[[], Embedder | None] | None = None) -> IssueIndex | None:
    """The active archive's index, or None when nothing has been imported (or the cache was cleared)."""
    info = active_info()
    if info is None:
        return None
    try:
        raw = json.loads((Path(info.path) / "issues.json").read_text(encoding="utf-8"))
        issues = [Issue.model_validate(x) for x in raw]
    except (OSError, ValueError):
        return None
    return IssueIndex(issues, info.key, embedder) if issues else None


def clear_archives() -> int:
    """Remove every imported archive; returns how many exports were stored."""
    root = archive_root()
    if not root.is_dir():
        return 0
    n = sum(1 for p in root.iterdir() if p.is_dir() and "-" not in p.name)
    shutil.rmtree(root, ignore_errors=True)
    return n


class ActiveArchive:
    """The active archive as an :class:`kb.retriever.IssueSearcher` that follows imports: when ``active.json``
    changes (a new ``verl-doctor issues import``, or ``issues clear``), the next search loads the new one."""

    def __init__(self, embedder: Callable[[], Embedder | None] | None = None) -> None:
        self._embedder = embedder
        self._stamp: tuple[int, int] | None = None
        self._index: IssueIndex | None = None

    def _current(self) -> IssueIndex | None:
        try:
            st = (archive_root() / "active.json").stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp != self._stamp:
            self._stamp = stamp
            self._index = load_active(self._embedder) if stamp is not None else None
        return self._index

    def similar(self, query: str, k: int = 3, semantic: bool = True) -> list[SimilarIssue]:
        index = self._current()
        return index.similar(query, k, semantic) if index is not None else []
