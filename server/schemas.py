"""Request and response models of the HTTP API (results reuse kb.result.Result)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from kb.entry import Entry
from kb.result import EnvSetting, FixAlternative, RenderedOverride

# Request models: every field is named as kb/request_fields.py says (the README's "Request fields" table).


class DiagnoseRequest(BaseModel):
    input: str = Field(min_length=1, description="the user's text: a traceback, a log excerpt or a question")
    top: int = Field(default=3, ge=1, le=20, description="how many diagnoses to return")


class ScanRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096, description="a job directory (or file) inside a --scan-root")


class EntrySummary(BaseModel):
    id: str
    title: str
    area: str
    verl: str


class EntryDetail(EntrySummary):
    symptoms: list[dict[str, Any]]
    metrics: list[dict[str, Any]]
    conditions: list[dict[str, Any]]
    overrides: list[RenderedOverride]
    alternatives: list[FixAlternative] = Field(
        default_factory=list, description="other fixes, each its own block (pick one; never paste them together)"
    )
    env: list[EnvSetting] = Field(default_factory=list)
    actions: list[str]
    questions: list[str]
    sources: list[str]
    related: list[str]
    sections: dict[str, str]


class Health(BaseModel):
    status: str
    entries: int
    kb_version: str
    semantic: bool


def entry_summary(entry: Entry) -> EntrySummary:
    return EntrySummary(id=entry.id, title=entry.title, area=entry.area, verl=entry.meta.verl)


def entry_detail(entry: Entry, verl_version: str | None = None) -> EntryDetail:
    from kb.engine import rendered_env
    from kb.fixvalues import render_fix

    m = entry.meta.model_dump(mode="json", exclude_none=True)
    overrides, alternatives = render_fix(entry, verl_version)
    return EntryDetail(
        **entry_summary(entry).model_dump(),
        symptoms=m.get("symptoms", []),
        metrics=m.get("metrics", []),
        conditions=m.get("conditions", []),
        overrides=overrides,
        alternatives=alternatives,
        env=rendered_env(entry),
        actions=list(entry.meta.fix.actions),
        questions=list(entry.meta.questions),
        sources=list(entry.meta.sources),
        related=list(entry.meta.related),
        sections=dict(entry.sections),
    )
