"""FAQ search: semantic and lexical ranks fused, with exact id/title hits first. Shared by every surface."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from kb.engine import Diagnoser
from kb.retriever import entry_document

_WORD = re.compile(r"[a-z0-9_]+")


class SearchHit(BaseModel):
    id: str
    title: str
    area: str
    score: float
    match: Literal["semantic", "lexical", "title"]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def search_entries(diagnoser: Diagnoser, query: str, k: int = 10) -> list[SearchHit]:
    query = query.strip()[:500]
    if not query:
        return []
    entries = diagnoser.entries
    scores: dict[str, tuple[float, str]] = {}

    def bump(entry_id: str, score: float, kind: str) -> None:
        if entry_id in entries and score > scores.get(entry_id, (0.0, ""))[0]:
            scores[entry_id] = (score, kind)

    q_lower = query.lower()
    q_words = _words(query)
    for e in entries.values():
        if q_lower in e.id or q_lower in e.title.lower():
            bump(e.id, 1.0, "title")
    retriever = diagnoser.retriever
    if retriever is not None:
        sem: dict[str, float] = {}
        lex: dict[str, float] = {}
        for entry_id, score, kind in retriever.search(query, k=max(k * 2, 10)):
            (sem if kind == "semantic" else lex)[entry_id] = score
        for entry_id in set(sem) | set(lex):
            fused = 0.75 * sem.get(entry_id, 0.0) + 0.25 * lex.get(entry_id, 0.0)
            bump(entry_id, round(fused, 4), "semantic" if entry_id in sem else "lexical")
    elif q_words:
        for e in entries.values():
            doc = _words(entry_document(e))
            overlap = len(q_words & doc) / len(q_words)
            if overlap:
                bump(e.id, round(0.9 * overlap, 4), "lexical")
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
    return [
        SearchHit(id=i, title=entries[i].title, area=entries[i].area, score=min(1.0, s), match=kind)  # type: ignore[arg-type]
        for i, (s, kind) in ranked
    ]
