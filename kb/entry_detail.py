"""An entry as every surface shows it: ``EntrySummary`` (a row of a list) and ``EntryDetail`` (the entry in
full, its override lines rendered for one verl version). ``corpus list/show --json``, ``GET /v1/entries``,
the FAQ pages' JSON twins and the MCP ``get_entry`` tool all print these models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from kb.entry import Condition, Entry, FixedIn, MetricSignature, Symptom
from kb.result import EnvSetting, FixAlternative, RenderedOverride

#: The front-matter lists shown as written: a field the entry leaves unset is left out, not printed as
#: null (an override check with ``equals: null`` and ``present`` would no longer validate).
_AS_WRITTEN = ("symptoms", "metrics", "conditions")


class EntrySummary(BaseModel):
    id: str
    title: str
    area: str
    verl: str = Field(description="the verl releases the entry applies to (a version range)")


class EntryDetail(EntrySummary):
    symptoms: list[Symptom] = Field(description="line-level signs: a regex over a line, or an exception type")
    metrics: list[MetricSignature] = Field(description="patterns in metric series")
    conditions: list[Condition] = Field(description="when the entry applies, each with its machine check if any")
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
    fixed_in: FixedIn | None = Field(default=None, description="a known bug: the release (and PR) that fixed it")
    generic: bool = Field(default=False, description="a failure any stack can hit: claimed only with verl evidence")

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for key in _AS_WRITTEN:
                if key in data:
                    data[key] = _without_none(data[key])
        return data


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def entry_summary(entry: Entry) -> EntrySummary:
    return EntrySummary(id=entry.id, title=entry.title, area=entry.area, verl=entry.meta.verl)


def entry_detail(entry: Entry, verl_version: str | None = None) -> EntryDetail:
    """The entry in full; its override lines for ``verl_version`` (every range's when None)."""
    from kb.engine import rendered_env
    from kb.fixvalues import render_fix

    m = entry.meta
    overrides, alternatives = render_fix(entry, verl_version)
    return EntryDetail(
        id=entry.id,
        title=entry.title,
        area=entry.area,
        verl=m.verl,
        symptoms=list(m.symptoms),
        metrics=list(m.metrics),
        conditions=list(m.conditions),
        overrides=overrides,
        alternatives=alternatives,
        env=rendered_env(entry),
        actions=list(m.fix.actions),
        questions=list(m.questions),
        sources=list(m.sources),
        related=list(m.related),
        sections=dict(entry.sections),
        fixed_in=m.fixed_in,
        generic=m.generic,
    )
