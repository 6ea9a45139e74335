"""Request and response models of the HTTP API (results reuse kb.result.Result, entries kb.entry_detail)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# Request models: every field is named as kb/request_fields.py says (the README's "Request fields" table).


class DiagnoseRequest(BaseModel):
    input: str = Field(min_length=1, description="the user's text: a traceback, a log excerpt or a question")
    top: int = Field(default=3, ge=1, le=20, description="how many diagnoses to return")


class ScanRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096, description="a job directory (or file) inside a --scan-root")


class Health(BaseModel):
    status: str
    entries: int
    kb_version: str
    semantic: bool
    model: Literal["loading", "ready", "off", "failed"] = Field(
        description="the embedding model: still loading in the background, ready, off (--no-semantic) or failed"
    )
    model_error: str | None = Field(default=None, description="why the model failed to load")
