"""The one result schema every surface renders (CLI --json, HTTP, MCP, TUI)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

ConditionStatus = Literal["holds", "fails", "unknown"]
EvidenceKind = Literal["regex", "exception", "metric", "semantic", "lexical"]


class ConditionResult(BaseModel):
    text: str
    status: ConditionStatus


class RenderedOverride(BaseModel):
    key: str
    value: str
    line: str = Field(
        description="the override as typed on the command line: '+' where needed, quoted for a POSIX shell where needed"
    )
    verl: str = Field(description="the verl versions this line applies to")


class EnvSetting(BaseModel):
    name: str
    value: str
    line: str = Field(description="NAME=value, the value shell-quoted where needed (prefix it with export)")
    note: str | None = Field(default=None, description="where it must be set, e.g. on every node before ray start")


class Evidence(BaseModel):
    kind: EvidenceKind
    text: str = Field(description="the input line (or metric summary) that fired")
    line_no: int | None = Field(default=None, description="1-based line in the input")
    pattern: str | None = Field(default=None, description="the regex, exception type or metric test that fired")
    steps: tuple[int, int] | None = Field(default=None, description="first and last step of a metric signature")


class KnownBug(BaseModel):
    """The match is a bug of some verl releases that a later one fixed."""

    fixed_in: str = Field(description="the first verl release with the fix")
    pr: str = Field(description="the pull request that fixed it")
    affected: bool | None = Field(
        description="True: the input's verl release has the bug; False: it has the fix; None: release unknown"
    )

    def summary(self) -> str:
        """The one line every surface shows."""
        if self.affected is True:
            return f"A bug of this verl release, fixed in verl {self.fixed_in} ({self.pr}): upgrade, or apply the fix."
        if self.affected is False:
            return f"This release already has the fix of verl {self.fixed_in} ({self.pr}): probably not this bug."
        return f"A bug fixed in verl {self.fixed_in} ({self.pr}): on an older release, upgrade or apply the fix."


class Match(BaseModel):
    id: str
    title: str
    area: str
    confidence: float = Field(ge=0.0, le=1.0)
    verdict: Literal["match", "possible"]
    cause: str
    conditions: list[ConditionResult]
    overrides: list[RenderedOverride]
    env: list[EnvSetting] = Field(default_factory=list, description="environment variables of the fix")
    actions: list[str]
    evidence: list[Evidence]
    sources: list[str]
    known_bug: KnownBug | None = Field(
        default=None, description="set for a bug that a release fixed: upgrade, or apply the fix above before it"
    )


class SignalsSummary(BaseModel):
    exceptions: list[str] = Field(default_factory=list)
    hydra_errors: list[str] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    gpu: str | None = None
    platform: str | None = None
    overrides: dict[str, str] = Field(default_factory=dict)
    metrics: list[str] = Field(default_factory=list)
    lines: int = 0


class ProvenanceClue(BaseModel):
    text: str = Field(description="the input line (or its part) that says which stack the input comes from")
    line_no: int | None = Field(default=None, description="1-based line in the input")


class Provenance(BaseModel):
    """Which stack the input comes from: a verl job, another framework, or no telling."""

    stack: str = Field(description="'verl', 'unknown', or the other stack, e.g. 'TRL', 'DeepSpeed', 'vLLM serving'")
    verl: bool | None = Field(description="True: a verl job; False: another stack; None: the input does not say")
    evidence: list[ProvenanceClue] = Field(default_factory=list)
    summary: str = Field(description="one sentence on what the input looks like, for every surface")


class SimilarIssue(BaseModel):
    """A past issue from an imported issue archive (``verl-doctor issues import``), shown beside the entries."""

    number: int
    title: str
    url: str
    state: str = ""
    labels: list[str] = Field(default_factory=list)
    score: float = Field(ge=0.0, le=1.0, description="similarity to the input (semantic and lexical fused)")


class Result(BaseModel):
    kb_version: str
    abstained: bool
    verl_version_used: str | None = Field(default=None, description="the verl version overrides are rendered for")
    signals: SignalsSummary
    matches: list[Match]
    notes: list[str] = Field(default_factory=list)
    similar_issues: list[SimilarIssue] = Field(
        default_factory=list, description="similar past issues from an imported archive, beside the entries"
    )
    provenance: Provenance | None = Field(
        default=None,
        description="which stack the input comes from; generic entries are claimed only with verl evidence",
    )
