"""What each FAQ page shows, as data: the JSON twin of every HTML page."""

from __future__ import annotations

from pydantic import BaseModel, Field

from kb.entry_detail import EntryDetail, EntrySummary
from kb.search import SearchHit


class AreaGroup(BaseModel):
    area: str
    count: int
    entries: list[EntrySummary]


class FaqIndex(BaseModel):
    """GET / : every entry, grouped by area."""

    kb_version: str
    total: int
    areas: list[AreaGroup]


class SearchPage(BaseModel):
    """GET /search?q= : the ranked hits for a query."""

    query: str
    hits: list[SearchHit]


class EntryPage(EntryDetail):
    """GET /entries/{id} : an entry in full, overrides rendered for ``verl_version`` (every range when unset)."""

    verl_version: str | None = Field(default=None, description="the verl version the overrides are rendered for")
    known_releases: list[str]
    related_entries: list[EntrySummary] = Field(description="the related entries that exist in this corpus")
