"""/mcp on the HTTP server, with the MCP SDK loaded after start-up.

Importing the SDK and building the MCP server cost about a second on two cores, most of ``serve``'s time
to its first answer. The route is mounted at once; the server is built in a thread once the app has
started and its session manager then runs in the app's lifespan. A request to /mcp that arrives earlier
waits for it (it is never refused because it came early); if the build fails, /mcp answers 503 with the
reason and the rest of the API keeps working.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from fastapi import APIRouter, FastAPI
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

#: The path of MCP over streamable HTTP (``server.mcp_server.MCP_PATH``, which imports the SDK).
MCP_PATH = "/mcp"


class LazyMCP:
    """The /mcp endpoint: waits until the MCP server is built and its session manager runs."""

    def __init__(self) -> None:
        self._ready: anyio.Event | None = None
        self._endpoint: ASGIApp | None = None
        self.error: str | None = None

    @property
    def ready(self) -> bool:
        return self._endpoint is not None

    async def run(self, app: FastAPI, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Build the server in a thread, then run its session manager until cancelled (the app stops)."""
        self._ready = anyio.Event()
        task_status.started()
        try:
            endpoint, manager = await anyio.to_thread.run_sync(_build, app)
        except Exception as exc:  # the API keeps working; /mcp says why it cannot
            self.error = f"{type(exc).__name__}: {exc}"
            print(f"warning: MCP over HTTP is unavailable ({self.error})", file=sys.stderr)
            self._ready.set()
            return
        async with manager.run():
            self._endpoint = endpoint
            self._ready.set()
            await anyio.sleep_forever()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._endpoint is None and self._ready is not None:
            await self._ready.wait()
        if self._endpoint is None:
            from server.problems import problem_response

            detail = self.error or "the MCP server is not running (the app's lifespan has not started)"
            await problem_response(503, "Service Unavailable", detail)(scope, receive, send)
            return
        await self._endpoint(scope, receive, send)


def _build(app: FastAPI) -> tuple[ASGIApp, Any]:
    from server.mcp_server import MCP_PATH as SDK_PATH
    from server.mcp_server import http_endpoint

    assert SDK_PATH == MCP_PATH, "server.mcp_server.MCP_PATH and server.mcp_mount.MCP_PATH disagree"
    return http_endpoint(app)


def attach(app: FastAPI) -> LazyMCP:
    """Mount /mcp on ``app``; the MCP server is built once the app has started (``app.state.mcp``)."""
    lazy = LazyMCP()
    app.router.routes.append(Route(MCP_PATH, endpoint=lazy, include_in_schema=False))

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            await tasks.start(lazy.run, app)
            yield
            tasks.cancel_scope.cancel()

    # FastAPI merges an included router's lifespan into the app's.
    app.include_router(APIRouter(lifespan=lifespan))
    app.state.mcp = lazy
    return lazy
