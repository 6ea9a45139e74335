"""GET /healthz."""

from __future__ import annotations

from fastapi import APIRouter, Request

from server.deps import DiagnoserDep, SettingsDep
from server.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
async def healthz(request: Request, diagnoser: DiagnoserDep, settings: SettingsDep) -> Health:
    """Liveness and what is loaded: the server answers at once, the model may still be loading."""
    model = request.app.state.model
    return Health(
        status="ok",
        entries=len(diagnoser.entries),
        kb_version=diagnoser.kb_version,
        semantic=settings.semantic,
        model=model.state,
        model_error=model.error,
    )
