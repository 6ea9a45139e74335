"""Typed dependencies shared by the routers."""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request

from kb.engine import Diagnoser
from server.settings import ServerSettings

TOKEN_COOKIE = "verl_doctor_token"


def get_settings(request: Request) -> ServerSettings:
    settings: ServerSettings = request.app.state.settings
    return settings


def get_diagnoser(request: Request) -> Diagnoser:
    diagnoser: Diagnoser = request.app.state.diagnoser
    return diagnoser


def require_token(request: Request, settings: Annotated[ServerSettings, Depends(get_settings)]) -> None:
    if settings.token is None:
        return
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":
        given = request.cookies.get(TOKEN_COOKIE, "")  # the FAQ pages' own calls carry the token as a cookie
    if not given or not hmac.compare_digest(given.strip().encode("utf-8"), settings.token.encode("utf-8")):
        raise HTTPException(
            status_code=401, detail="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
        )


SettingsDep = Annotated[ServerSettings, Depends(get_settings)]
DiagnoserDep = Annotated[Diagnoser, Depends(get_diagnoser)]
Auth = Depends(require_token)


def retriever_of(diagnoser: Diagnoser) -> Any:
    return diagnoser.retriever
