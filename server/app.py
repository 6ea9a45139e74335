"""The FastAPI application: JSON API (and, mounted beside it, the FAQ pages and MCP)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kb import __version__
from kb.engine import Diagnoser
from server import mcp_server, web
from server.problems import install_handlers, problem_response
from server.routes import chat, diagnose, entries, health, scan
from server.settings import ServerSettings


class BodySizeLimit:
    """Refuses bodies over the limit with 413, from Content-Length or while streaming; uploads have their own cap."""

    def __init__(self, app: ASGIApp, limit: int, upload_limit: int) -> None:
        self.app, self.limit, self.upload_limit = app, limit, upload_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        limit = (
            self.upload_limit
            if content_type.startswith(("multipart/", "application/gzip", "application/x-gzip"))
            else self.limit
        )
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await problem_response(413, "Request too large", f"body is {int(declared)} bytes; the limit is {limit}")(
                scope, receive, send
            )
            return
        seen = 0
        rejected = False

        async def counting_receive() -> Message:
            nonlocal seen, rejected
            if rejected:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # Answer now and tell the app the client went away; whatever it sends later is dropped.
                    rejected = True
                    await problem_response(413, "Request too large", f"body exceeds the limit of {limit} bytes")(
                        scope, receive, send
                    )
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not rejected:
                await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not rejected:
                raise


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
            loaded.retriever  # noqa: B018 - load the model and index once, before the first request
        yield

    app = FastAPI(
        title="verl-doctor",
        version=__version__,
        summary="Diagnoses verl failures: the known problem, its cause and the overrides for your verl version.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.diagnoser = loaded
    install_handlers(app)
    for router in (health.router, diagnose.router, entries.router, chat.router, scan.router):
        app.include_router(router)
    web.attach(app)
    mcp_server.attach(app)
    app.add_middleware(BodySizeLimit, limit=settings.max_body_bytes, upload_limit=settings.max_upload_bytes)
    return app
