"""FAQ search: semantic and lexical ranks fused, with exact id/title hits first. Shared by every surface."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from kb.engine import Diagnoser
from kb.retriever import entry_document

_WORD = re.compile(r"[a-z0-9_]+")
#: Words that say nothing about a problem: "how do I bake bread" shares them with every entry, so they never
#: make a lexical hit on their own.
_STOP = frozenset(
    " ".join(
        (
            "a about an and any are as at be but by can could do does doesn for from get got has have how i if in",
            "into is it its me my no not of on or should so than that the their then there this to up use using",
            "was what when where which who why will with would you your",
        )
    ).split()
)
#: Below this cosine similarity (all-MiniLM-L6-v2) of its best entry, a query is about nothing in the corpus and
#: the search says so instead of listing the nearest strangers. Measured on tests/eval/questions (bundled
#: corpus, 273 entries): the best entry of every on-topic question scored >= 0.386, of every off-topic one
#: (bread, CSS, postgres, ...) <= 0.289; 'qqqzzzxxx' scores 0.226.
SEMANTIC_FLOOR = 0.30
#: Without the model: the share of a query's content words an entry must hold to be a hit. On
#: tests/eval/questions, 0.4 keeps the expected entry in the top 10 for 54 of 55 on-topic questions (any
#: shared word, stop words included: 53) and answers none of the 5 off-topic ones (before: all 5).
LEXICAL_MIN_OVERLAP = 0.4


class SearchHit(BaseModel):
    id: str
    title: str
    area: str
    score: float
    match: Literal["semantic", "lexical", "title"]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def search_entries(diagnoser: Diagnoser, query: str, k: int = 10) -> list[SearchHit]:
    """The entries for ``query``, best first; empty when nothing in the corpus is about it (every surface
    then says that nothing matched)."""
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
        if sem and max(sem.values()) < SEMANTIC_FLOOR:
            sem, lex = {}, {}  # off-topic: BM25 alone would still rank whatever shares a word such as "how"
        for entry_id in set(sem) | set(lex):
            fused = 0.75 * sem.get(entry_id, 0.0) + 0.25 * lex.get(entry_id, 0.0)
            bump(entry_id, round(fused, 4), "semantic" if entry_id in sem else "lexical")
    elif q_words:
        content = (q_words - _STOP) or q_words
        for e in entries.values():
            overlap = len(content & _words(entry_document(e))) / len(content)
            if overlap >= LEXICAL_MIN_OVERLAP:
                bump(e.id, round(0.9 * overlap, 4), "lexical")
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
    return [
        SearchHit(id=i, title=entries[i].title, area=entries[i].area, score=min(1.0, s), match=kind)  # type: ignore[arg-type]
        for i, (s, kind) in ranked
    ]
