"""GET /healthz."""

from __future__ import annotations

from fastapi import APIRouter

from server.deps import DiagnoserDep, SettingsDep
from server.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
async def healthz(diagnoser: DiagnoserDep, settings: SettingsDep) -> Health:
    """Liveness and what is loaded."""
    return Health(
        status="ok", entries=len(diagnoser.entries), kb_version=diagnoser.kb_version, semantic=settings.semantic
    )
