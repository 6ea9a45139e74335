"""The FastAPI application: JSON API (and, mounted beside it, the FAQ pages and MCP)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from kb import __version__
from kb.engine import Diagnoser
from server import mcp_mount, web
from server.gate import RequestGate
from server.problems import install_handlers
from server.routes import chat, diagnose, entries, health, preflight, scan
from server.settings import ServerSettings
from server.warmup import ModelLoad


def load_diagnoser(settings: ServerSettings) -> Diagnoser:
    """The composition root's diagnoser for these settings; entries that fail to load are reported on
    stderr and skipped. Raises ``kb.corpus.CorpusError`` when the corpus cannot be read."""
    import sys

    import indexer

    loaded = indexer.load_diagnoser(settings.corpus, semantic=settings.semantic)
    for problem in loaded.corpus.problems:
        print(f"warning: skipped {problem}", file=sys.stderr)
    return loaded


def create_app(settings: ServerSettings | None = None, diagnoser: Diagnoser | None = None) -> FastAPI:
    settings = settings or ServerSettings()
    loaded = diagnoser or load_diagnoser(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.semantic:
            # Ready at once: the model and index load in a thread; a request that needs them waits for
            # that load (Diagnoser.retriever loads once), and /healthz says whether it has finished.
            app.state.model.start(app)
        yield

    # FastAPIOffline: /docs and /redoc load Swagger UI and ReDoc from the package, not from a CDN.
    app = FastAPIOffline(
        title="verl-doctor",
        version=__version__,
        summary="Diagnoses verl failures: the known problem, its cause and the overrides for your verl version.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.diagnoser = loaded
    app.state.model = ModelLoad("loading" if settings.semantic else "off")
    install_handlers(app)
    for router in (health.router, diagnose.router, entries.router, chat.router, scan.router, preflight.router):
        app.include_router(router)
    web.attach(app)
    mcp_mount.attach(app)  # the MCP SDK loads after start-up: /healthz answers without waiting for it
    app.add_middleware(RequestGate, settings=settings)  # Host check, token before body, body caps
    return app
