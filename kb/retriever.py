"""The interfaces the semantic layer implements (entry retrieval, the issue archive); kb never imports
the implementations (``indexer.semantic``, ``indexer.issues``)."""

from __future__ import annotations

from typing import Protocol

from kb.entry import Entry
from kb.result import SimilarIssue


class Retriever(Protocol):
    """Ranks corpus entries for a short query (a distilled error or a question)."""

    def search(self, query: str, k: int = 10) -> list[tuple[str, float, str]]:
        """(entry id, score in [0, 1], kind 'semantic' or 'lexical'), best first."""
        ...


class IssueSearcher(Protocol):
    """Finds past issues similar to a short query (a distilled error or a question)."""

    def similar(self, query: str, k: int = 3, semantic: bool = True) -> list[SimilarIssue]:
        """Similar issues, best first, each with a score in [0, 1]; only those above the index's floor."""
        ...


def entry_document(entry: Entry) -> str:
    """The text an entry is indexed by: what people see and ask, not the whole body."""
    m = entry.meta
    literal_symptoms = [s.regex for s in m.symptoms if s.regex] + [s.exception for s in m.symptoms if s.exception]
    metrics = [" ".join(sig.names) for sig in m.metrics]
    parts = [
        m.title,
        *m.questions,
        *(s.replace("\\", "") for s in literal_symptoms if s),
        *metrics,
        entry.sections.get("What you see", "")[:600],
    ]
    return "\n".join(p for p in parts if p)
