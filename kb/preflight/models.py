"""The result schema of ``preflight``, the same on every surface (CLI --json, HTTP, MCP, TUI)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kb.result import FixAlternative, RenderedOverride

Source = Literal["override", "default", "derived", "option"]
Stage = Literal["hydra", "validate", "workers", "training"]
Severity = Literal["error", "later", "warning"]


class PreflightValue(BaseModel):
    """One value a finding depends on, and where it came from."""

    key: str = Field(description="the config key, or a name verl computes (n_gpus, real_train_batch_size)")
    value: str = Field(description="the value as Hydra would spell it")
    source: Source = Field(
        description="override: the input sets it; default: the release's YAML; derived: computed or interpolated "
        "from other values; option: --nnodes / --gpus-per-node"
    )
    note: str | None = Field(default=None, description="for a derived value, what it was computed from")


class PreflightFinding(BaseModel):
    check: str = Field(description="the rule's id (kb.preflight.checks)")
    stage: Stage = Field(
        description="hydra: composing the overrides; validate: verl's start-up validation, before Ray; "
        "workers: when the workers are built, after Ray starts; training: the first steps"
    )
    severity: Severity = Field(
        description="error: verl refuses to start; later: verl starts and fails at the stage named; warning: verl "
        "runs, but not as the input means (an ignored key, a deprecated one)"
    )
    message: str = Field(description="what verl raises (its own words, with the input's values), or what happens")
    explanation: str = Field(description="why, in verl-doctor's words")
    exception: str | None = Field(default=None, description="the exception type verl raises")
    values: list[PreflightValue] = Field(default_factory=list, description="the values that break it")
    entry: str | None = Field(default=None, description="the corpus entry describing this failure")
    verl_source: str | None = Field(default=None, description="where verl checks it (file at the release's tag)")
    overrides: list[RenderedOverride] = Field(default_factory=list, description="the main fix: one block to paste")
    alternatives: list[FixAlternative] = Field(
        default_factory=list, description="other fixes, each its own block (pick one; never paste them together)"
    )


class PreflightResult(BaseModel):
    kb_version: str
    verl_version: str = Field(description="the verl version asked for (or found installed, or assumed)")
    release_checked: str = Field(description="the release whose config and rules were used")
    version_source: Literal["option", "installed", "newest"] = Field(
        description="where verl_version came from: --verl-version, the installed verl's metadata, or the newest known"
    )
    starts: bool = Field(description="True when verl would get through its start-up validation")
    fails_later: bool = Field(description="True when a finding says verl would fail after starting")
    overrides: list[str] = Field(description="the overrides checked, in the input's order")
    placeholders: list[str] = Field(
        default_factory=list, description="shell variables the input uses but does not assign: their values are unknown"
    )
    notes: list[str] = Field(default_factory=list)
    findings: list[PreflightFinding] = Field(
        description="in the order verl evaluates them: the first error is the one verl raises"
    )

    @property
    def errors(self) -> list[PreflightFinding]:
        return [f for f in self.findings if f.severity == "error"]


class PreflightRequest(BaseModel):
    """What every surface takes (the CLI's options have the same names)."""

    input: str = Field(
        min_length=1,
        max_length=1_000_000,
        description="a launch command (python -m verl.trainer.main_ppo k=v ...), a launch script, the text of a "
        ".hydra/overrides.yaml or of a resolved config.yaml",
    )
    verl_version: str | None = Field(
        default=None,
        max_length=40,
        description="the verl release to check for (default: the installed verl, else the newest known)",
    )
    nnodes: int | None = Field(
        default=None, ge=1, le=100_000, description="trainer.nnodes, when the input does not set it"
    )
    gpus_per_node: int | None = Field(
        default=None, ge=1, le=1024, description="trainer.n_gpus_per_node, when the input does not set it"
    )
