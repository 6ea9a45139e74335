"""POST /v1/preflight."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from starlette.concurrency import run_in_threadpool

from kb.preflight.models import PreflightRequest, PreflightResult
from server.deps import Auth
from server.problems import problem_responses

router = APIRouter(prefix="/v1", tags=["preflight"], dependencies=[Auth])


@router.post("/preflight", response_model=PreflightResult, responses=problem_responses(400, 401, 413, 422))
async def preflight(body: PreflightRequest) -> PreflightResult:
    """Would verl start with this launch? The findings in verl's order (the first error is the one verl raises),
    each with the values that break it, the corpus entry and the fix for that release."""
    from kb.preflight.api import NoOverrides, preflight_text
    from kb.preflight.inputs import InputError
    from kb.versions import VersionError

    try:
        return await run_in_threadpool(preflight_text, body.input, body.verl_version, body.nnodes, body.gpus_per_node)
    except (InputError, NoOverrides, VersionError) as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None
