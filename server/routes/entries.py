"""GET /v1/entries, GET /v1/entries/{id}, GET /v1/search."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from kb.entry_detail import EntryDetail, EntrySummary, entry_detail, entry_summary
from kb.search import SearchHit, search_entries
from kb.suggest import no_such_entry
from kb.versions import VersionError, parse_version
from server.deps import Auth, DiagnoserDep
from server.problems import problem_responses

router = APIRouter(prefix="/v1", tags=["entries"], dependencies=[Auth])

#: Hits a search returns unless `top` says otherwise.
SEARCH_TOP = 10


@router.get("/entries", response_model=list[EntrySummary], responses=problem_responses(401, 422))
async def list_entries(
    diagnoser: DiagnoserDep, area: Annotated[str | None, Query(max_length=40)] = None
) -> list[EntrySummary]:
    """Every entry (id, title, area, verl range), optionally of one area."""
    entries = sorted(diagnoser.entries.values(), key=lambda e: (e.area, e.id))
    return [entry_summary(e) for e in entries if area is None or e.area == area]


@router.get(
    "/entries/{entry_id}",
    response_model=EntryDetail,
    responses=problem_responses(401, 404, 422),
)
async def get_entry(
    entry_id: str,
    diagnoser: DiagnoserDep,
    verl_version: Annotated[
        str | None, Query(max_length=40, description="render overrides for this verl version")
    ] = None,
) -> EntryDetail:
    """One entry in full, with its overrides rendered for a verl version (all ranges when none is given)."""
    entry = diagnoser.entries.get(entry_id)
    if entry is None:
        raise HTTPException(status_code=404, detail=no_such_entry(entry_id[:200], diagnoser.entries))
    if verl_version is not None:
        try:
            parse_version(verl_version)
        except VersionError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from None
    return entry_detail(entry, verl_version)


@router.get("/search", response_model=list[SearchHit], responses=problem_responses(401, 422))
async def search(
    diagnoser: DiagnoserDep,
    query: Annotated[str | None, Query(max_length=500, description="words, an error message or an entry id")] = None,
    top: Annotated[int | None, Query(ge=1, le=50, description="how many entries (default 10)")] = None,
    q: Annotated[str | None, Query(max_length=500, deprecated=True, description="the old name of `query`")] = None,
    k: Annotated[int | None, Query(ge=1, le=50, deprecated=True, description="the old name of `top`")] = None,
) -> list[SearchHit]:
    """Semantic and lexical search over the FAQ entries (`q` and `k`, the old names, are still accepted)."""
    text = query if query is not None else q or ""
    limit = top if top is not None else k if k is not None else SEARCH_TOP
    return await run_in_threadpool(search_entries, diagnoser, text, limit)
