"""POST /v1/scan: a job directory inside a scan root, or an uploaded .tar.gz of one."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from kb.scan import ScanReport, scan_paths
from server.deps import Auth, DiagnoserDep, SettingsDep
from server.problems import problem_responses
from server.safety import Refused, confine, extract_job_archive
from server.schemas import ScanRequest

router = APIRouter(prefix="/v1", tags=["scan"], dependencies=[Auth])


_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": ScanRequest.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": "a .tar.gz of a job directory"}
                    },
                    "required": ["file"],
                }
            },
        },
    }
}


@router.post(
    "/scan",
    response_model=ScanReport,
    openapi_extra=_BODY,
    responses=problem_responses(400, 401, 403, 404, 413, 415, 422),
)
async def scan(request: Request, diagnoser: DiagnoserDep, settings: SettingsDep) -> Any:
    """Scan a job's output directory: incidents grouped across ranks, first failure vs cascade, metric
    signatures, the job's overrides checked. JSON `{"path": ...}` inside a scan root, or a multipart
    upload `file` holding a .tar.gz of the job directory."""
    content_type = request.headers.get("content-type", "")
    try:
        if content_type.startswith("application/json"):
            try:
                body = ScanRequest.model_validate_json(await request.body())
            except ValidationError as exc:
                raise HTTPException(status_code=422, detail=exc.errors()[0]["msg"]) from None
            target = confine(body.path, settings.scan_roots)
            return await run_in_threadpool(scan_paths, [target], diagnoser, confine_to=settings.scan_roots)
        if content_type.startswith("multipart/form-data"):
            return await _scan_upload(request, diagnoser, settings.max_extracted_bytes)
    except Refused as exc:
        raise HTTPException(status_code=exc.status, detail=str(exc)) from None
    raise HTTPException(status_code=415, detail="send JSON {\"path\": ...} or a multipart upload 'file' (.tar.gz)")


async def _scan_upload(request: Request, diagnoser: Any, max_total: int) -> Any:
    form = await request.form()
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise Refused(422, "multipart field 'file' (a .tar.gz of the job directory) is missing")
    work = Path(tempfile.mkdtemp(prefix="verl-doctor-upload-"))
    try:
        archive = work / "job.tar.gz"
        with archive.open("wb") as out:
            while chunk := await upload.read(1 << 20):
                out.write(chunk)
        job = work / "job"
        job.mkdir()
        await run_in_threadpool(extract_job_archive, archive, job, max_total)
        archive.unlink()
        return await run_in_threadpool(scan_paths, [job], diagnoser)
    finally:
        await form.close()
        shutil.rmtree(work, ignore_errors=True)
