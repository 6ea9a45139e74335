"""The one result schema every surface renders (CLI --json, HTTP, MCP, TUI)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr

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
    example: bool = Field(
        default=False,
        description="True: the entry's example value, not computed (the input lacks the job's values); set your own",
    )
    computed: str | None = Field(
        default=None,
        description="how the value was computed from the job's values, 'data.train_batch_size'",
    )


class FixAlternative(BaseModel):
    """Another way to fix it: its own block to copy, never to be pasted together with the main fix."""

    title: str
    overrides: list[RenderedOverride]


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
    overrides: list[RenderedOverride] = Field(description="the main fix: one block to paste")
    alternatives: list[FixAlternative] = Field(
        default_factory=list, description="other fixes, each its own block (pick one; never paste them together)"
    )
    env: list[EnvSetting] = Field(default_factory=list, description="environment variables of the fix")
    actions: list[str]
    evidence: list[Evidence]
    sources: list[str]
    known_bug: KnownBug | None = Field(
        default=None, description="set for a bug that a release fixed: upgrade, or apply the fix above before it"
    )
    # What the confidence was computed from (kb.calibration.FEATURES): for fitting, never serialised.
    _features: dict[str, float] = PrivateAttr(default_factory=dict)

    @property
    def features(self) -> dict[str, float]:
        return self._features

    @features.setter
    def features(self, value: dict[str, float]) -> None:
        self._features = value

    @property
    def score(self) -> float:
        """The hand-set fused score (after provenance) that ``confidence`` was calibrated from: the scale the
        hand-set thresholds of :mod:`kb.scoring` are on (the confidence itself when no calibration is shipped)."""
        return self._features.get("score", self.confidence)


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


class KeySuggestion(BaseModel):
    """Hydra rejected a config key of the input ("Could not override 'x'", "Key 'x' is not in struct",
    "Could not append to config"): the key the user most likely meant on their verl release."""

    key: str = Field(description="the key Hydra rejected")
    error: Literal["could_not_override", "not_in_struct", "could_not_append"]
    line_no: int | None = Field(default=None, description="1-based line of Hydra's message in the input")
    release: str = Field(description="the verl release the key was checked against")
    release_assumed: bool = Field(description="True when the input names no verl version (the newest known is used)")
    suggested_key: str | None = Field(default=None, description="the key to write instead ('+' included in line)")
    line: str | None = Field(
        default=None,
        description="the override to use with the input's own value, as render_override makes it; None when the "
        "input does not carry the value",
    )
    reason: str = Field(description="why: a rename, a typo, a key that needs '+', a key that must drop '+'")
    candidates: list[str] = Field(default_factory=list, description="other close keys of the release")

    def summary(self) -> str:
        """The one line every surface shows."""
        where = f"checked against verl {self.release}" + (
            ": the input names no release, so the newest known" if self.release_assumed else ""
        )
        reason = self.reason.rstrip(".")
        if self.suggested_key is None:
            return f"Hydra rejected '{self.key}': {reason} [{where}]"
        return f"Hydra rejected '{self.key}': did you mean {self.suggested_key}? {reason} [{where}]"


class Result(BaseModel):
    kb_version: str
    abstained: bool
    verl_version_used: str | None = Field(default=None, description="the verl version overrides are rendered for")
    signals: SignalsSummary
    matches: list[Match]
    notes: list[str] = Field(default_factory=list)
    did_you_mean: list[KeySuggestion] = Field(
        default_factory=list, description="for each config key Hydra rejected in the input, the key meant"
    )
    similar_issues: list[SimilarIssue] = Field(
        default_factory=list, description="similar past issues from an imported archive, beside the entries"
    )
    provenance: Provenance | None = Field(
        default=None,
        description="which stack the input comes from; generic entries are claimed only with verl evidence",
    )
