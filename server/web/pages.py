"""The FAQ pages: /, /search, /diagnose, /entries/{id}, /areas/{area}; each HTML page has a JSON twin."""

from __future__ import annotations

import hmac
import inspect
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from kb.engine import Diagnoser
from kb.entry import AREAS, Entry
from kb.entry_detail import entry_detail, entry_summary
from kb.inputs import InputError
from kb.result import RenderedOverride, Result
from kb.search import search_entries
from kb.suggest import closest_ids
from kb.versions import KNOWN_RELEASES, VersionError, parse_version
from server.deps import TOKEN_COOKIE, DiagnoserDep, get_settings
from server.problems import problem_response
from server.settings import ServerSettings
from server.web import permalink
from server.web.models import AreaGroup, EntryPage, FaqIndex, SearchPage
from server.web.render import STATIC, html, page, root_of, wants_json

#: Paths that belong to the JSON API (or MCP): their errors stay JSON whoever asks.
_API_PREFIXES = ("/v1", "/mcp", "/healthz", "/openapi.json", "/docs", "/redoc")
MAX_QUERY = 500
DIAGNOSE_TOP = 5


class PageError(Exception):
    """An error on a page: an HTML page for browsers, a JSON problem document for JSON clients."""

    def __init__(
        self, status: int, title: str, detail: str | None = None, suggestions: list[str] | None = None
    ) -> None:
        super().__init__(detail or title)
        self.status, self.title, self.detail = status, title, detail
        self.suggestions = suggestions or []  # entry ids the error page links to ("did you mean")


class _TokenAccepted(Exception):
    """``?token=`` was right: set the cookie and redirect to the same page without it in the URL."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(url)
        self.url, self.token = url, token


def local_path(request: Request) -> str:
    """The request's path, never a protocol-relative URL ("//host/..."), for redirects and form actions."""
    return "/" + request.url.path.lstrip("/")


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.strip().encode("utf-8", "replace"), token.encode("utf-8"))


def page_auth(request: Request, settings: Annotated[ServerSettings, Depends(get_settings)]) -> None:
    """With a token configured, pages need it: as ``?token=`` once (then a cookie), a cookie, or a bearer header."""
    token = settings.token
    if token is None:
        return
    given = request.query_params.get("token")
    if given is not None:
        if not _same(given, token):
            raise PageError(401, "Unauthorized", "That token is not the one this server was started with.")
        rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        raise _TokenAccepted(local_path(request) + (f"?{rest}" if rest else ""), token)
    scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
    candidate = bearer if scheme.lower() == "bearer" else request.cookies.get(TOKEN_COOKIE, "")
    if not candidate or not _same(candidate, token):
        raise PageError(401, "Unauthorized", "This verl-doctor server needs its access token.")


router = APIRouter(include_in_schema=False, dependencies=[Depends(page_auth)])


def _groups(diagnoser: Diagnoser, only: str | None = None) -> list[AreaGroup]:
    by_area: dict[str, list[str]] = {}
    for entry in diagnoser.entries.values():
        by_area.setdefault(entry.area, []).append(entry.id)
    order = [a for a in AREAS if a in by_area] + sorted(a for a in by_area if a not in AREAS)
    groups = []
    for area in order:
        if only is not None and area != only:
            continue
        entries = sorted((diagnoser.entries[i] for i in by_area[area]), key=lambda e: e.title.lower())
        groups.append(AreaGroup(area=area, count=len(entries), entries=[entry_summary(e) for e in entries]))
    return groups


@router.get("/")
async def index(request: Request, diagnoser: DiagnoserDep) -> Response:
    groups = _groups(diagnoser)
    data = FaqIndex(kb_version=diagnoser.kb_version, total=sum(g.count for g in groups), areas=groups)
    return page(request, data, "index.html", title="verl-doctor · FAQ")


@router.get("/search")
async def search(request: Request, diagnoser: DiagnoserDep, q: str = "", k: str = "20") -> Response:
    query = q.strip()
    if len(query) > MAX_QUERY:
        raise PageError(422, "Invalid request", f"the query is {len(query)} characters; the limit is {MAX_QUERY}")
    try:
        limit = max(1, min(50, int(k)))
    except ValueError:
        raise PageError(422, "Invalid request", "k must be a whole number") from None
    hits = await run_in_threadpool(search_entries, diagnoser, query, limit) if query else []
    data = SearchPage(query=query, hits=hits)
    title = f"{query} · search · verl-doctor" if query else "Search · verl-doctor"
    return page(request, data, "search.html", title=title, query=query)


@router.get("/diagnose")
async def diagnose_form(request: Request) -> Response:
    return RedirectResponse(f"{root_of(request)}/#paste", status_code=303)


@router.post("/diagnose")
async def diagnose(request: Request, diagnoser: DiagnoserDep) -> Response:
    form = await request.form()
    raw = form.get("input", "")
    text = raw if isinstance(raw, str) else (await raw.read()).decode("utf-8", "replace")
    try:
        top = max(1, min(20, int(str(form.get("top", DIAGNOSE_TOP)))))
    except ValueError:
        top = DIAGNOSE_TOP
    try:
        result: Result = await run_in_threadpool(diagnoser.diagnose_input, text, top)
    except InputError as exc:
        if wants_json(request):
            return problem_response(422, "Invalid request", str(exc))
        return html(
            request, "diagnose.html", 422, title="Diagnose · verl-doctor", pasted=text, result=None, error=str(exc)
        )
    if wants_json(request):
        return JSONResponse(result.model_dump(mode="json"), headers={"Vary": "Accept"})
    link = permalink.href(root_of(request), text)
    title = "Diagnosis · verl-doctor"
    return html(request, "diagnose.html", title=title, pasted=text, result=result, error=None, permalink=link)


def _override_groups(overrides: list[RenderedOverride], version: str | None) -> list[tuple[str, list[str]]]:
    """Override lines grouped by the verl range they are for (one group when a version is chosen)."""
    if version is not None:
        return [(f"verl {version}", [o.line for o in overrides])] if overrides else []
    groups: dict[str, list[str]] = {}
    for o in overrides:
        groups.setdefault(o.verl, []).append(o.line)
    return list(groups.items())


def _notes(entry: Entry) -> dict[str, str]:
    """key → note under the fix blocks: the entry's notes, and how a computed value is worked out."""
    notes: dict[str, str] = {}
    for _, group in entry.meta.fix.override_groups():
        for o in group:
            text = [o.note] if o.note else []
            if o.expr:
                text.append(f"the value shown is an example; diagnosing your log computes it as {o.expr}")
            if text:
                notes[o.key] = "; ".join(text)
    return notes


@router.get("/entries/{entry_id}")
async def entry_page(request: Request, entry_id: str, diagnoser: DiagnoserDep, verl: str = "") -> Response:
    entry = diagnoser.entries.get(entry_id)
    if entry is None:
        close = closest_ids(entry_id[:200], diagnoser.entries)
        raise PageError(404, "Not found", f"There is no entry '{entry_id[:100]}'.", close)
    version = verl.strip() or None
    if version is not None:
        try:
            if len(version) > 40:
                raise VersionError(f"{version[:40]!r}... is not a version number")
            parse_version(version)
        except VersionError as exc:
            raise PageError(422, "Invalid request", str(exc)) from None
    detail = entry_detail(entry, version)
    related = [entry_summary(diagnoser.entries[r]) for r in entry.meta.related if r in diagnoser.entries]
    data = EntryPage(
        **detail.model_dump(), verl_version=version, known_releases=list(KNOWN_RELEASES), related_entries=related
    )
    releases = list(KNOWN_RELEASES) + ([version] if version and version not in KNOWN_RELEASES else [])
    return page(
        request,
        data,
        "entry.html",
        title=f"{entry.title} · verl-doctor",
        releases=releases,
        override_groups=_override_groups(data.overrides, version),
        alternative_groups=[(a.title, _override_groups(a.overrides, version)) for a in data.alternatives],
        notes=_notes(entry),
    )


@router.get("/areas")
async def areas_index(request: Request) -> Response:
    return RedirectResponse(f"{root_of(request)}/#areas", status_code=303)


@router.get("/areas/{area}")
async def area_page(request: Request, area: str, diagnoser: DiagnoserDep) -> Response:
    groups = _groups(diagnoser, only=area)
    if not groups:
        if area not in AREAS:
            raise PageError(404, "Not found", f"There is no area '{area[:40]}'.")
        groups = [AreaGroup(area=area, count=0, entries=[])]
    return page(request, groups[0], "area.html", title=f"{area} · verl-doctor", areas=_groups(diagnoser))


# --------------------------------------------------------------------------- wiring


def _wants_html(request: Request) -> bool:
    path = request.url.path
    if any(path == p or path.startswith(p + "/") for p in _API_PREFIXES):
        return False
    return not wants_json(request) and "text/html" in request.headers.get("accept", "").lower()


def attach_pages(app: FastAPI) -> None:
    """Add the pages, their static assets and their error handling to ``app``."""

    async def page_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
        if wants_json(request):
            response = problem_response(exc.status, exc.title, exc.detail)
            response.headers.update(headers)
            return response
        template = "login.html" if exc.status == 401 else "error.html"
        return html(
            request,
            template,
            exc.status,
            headers=headers,
            title=f"{exc.title} · verl-doctor",
            error=exc,
            next_path=local_path(request),
            tried=request.query_params.get("token") is not None,
        )

    async def token_accepted(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, _TokenAccepted)
        response = RedirectResponse(exc.url, status_code=303)
        response.set_cookie(
            TOKEN_COOKIE,
            exc.token,
            httponly=True,
            samesite="strict",
            path=root_of(request) or "/",
            secure=request.url.scheme == "https",
        )
        return response

    fallback = app.exception_handlers.get(StarletteHTTPException)

    async def http_error(request: Request, exc: Exception) -> Response:
        """Browsers asking for a page that is not there get an HTML page; everyone else the API's JSON."""
        assert isinstance(exc, StarletteHTTPException)
        if _wants_html(request):
            title = {404: "Not found", 405: "Method not allowed"}.get(exc.status_code, "Error")
            detail = exc.detail if isinstance(exc.detail, str) and exc.detail != title else None
            if exc.status_code == 404:
                detail = f"Nothing lives at {request.url.path[:200]}."
            return html(
                request,
                "error.html",
                exc.status_code,
                title=f"{title} · verl-doctor",
                error=PageError(exc.status_code, title, detail),
                next_path=local_path(request),
                tried=False,
            )
        if fallback is None:
            return problem_response(exc.status_code, "Error", str(exc.detail))
        response = fallback(request, exc)
        return await response if inspect.isawaitable(response) else response

    app.add_exception_handler(PageError, page_error)
    app.add_exception_handler(_TokenAccepted, token_accepted)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
