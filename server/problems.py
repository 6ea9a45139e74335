"""Errors as JSON problem documents (RFC 9457 shape), never a stack trace."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None


def problem_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for error answers: a Problem document, served as application/problem+json."""
    ref = {"$ref": "#/components/schemas/Problem"}
    return {
        code: {
            "model": Problem,
            "description": _TITLES.get(code, "Error"),
            "content": {"application/problem+json": {"schema": ref}},
        }
        for code in codes
    }


def problem_response(status: int, title: str, detail: str | None = None) -> JSONResponse:
    body = Problem(title=title, status=status, detail=detail).model_dump(exclude_none=True)
    return JSONResponse(body, status_code=status, media_type="application/problem+json")


_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    413: "Request too large",
    415: "Unsupported media type",
    422: "Invalid request",
}


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        title = _TITLES.get(exc.status_code, "Error")
        detail = exc.detail if isinstance(exc.detail, str) and exc.detail != title else None
        return problem_response(exc.status_code, title, detail)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]
        return problem_response(422, "Invalid request", "; ".join(parts))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        return problem_response(500, "Internal error", f"{type(exc).__name__}: {exc}"[:300])
