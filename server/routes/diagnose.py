"""POST /v1/diagnose."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from starlette.concurrency import run_in_threadpool

from kb.inputs import InputError
from kb.result import Result
from server.deps import Auth, DiagnoserDep
from server.problems import problem_responses
from server.schemas import DiagnoseRequest

router = APIRouter(prefix="/v1", tags=["diagnose"], dependencies=[Auth])


@router.post(
    "/diagnose",
    response_model=Result,
    responses=problem_responses(400, 401, 413, 422),
)
async def diagnose(body: DiagnoseRequest, diagnoser: DiagnoserDep) -> Result:
    """Diagnose a traceback, a log excerpt or a question: ranked known problems with their evidence."""
    try:
        return await run_in_threadpool(diagnoser.diagnose_input, body.input, body.top)
    except InputError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None
