"""Request and response models of the HTTP API (results reuse kb.result.Result)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from kb.entry import Entry
from kb.result import EnvSetting, FixAlternative, RenderedOverride


class DiagnoseRequest(BaseModel):
    input: str = Field(min_length=1, description="a traceback, a log excerpt or a question")
    top: int = Field(default=3, ge=1, le=20)


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
    model: Literal["loading", "ready", "off", "failed"] = Field(
        description="the embedding model: still loading in the background, ready, off (--no-semantic) or failed"
    )
    model_error: str | None = Field(default=None, description="why the model failed to load")


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
