"""The corpus entry model: the front matter of one Markdown file, validated.

The body's four sections are kept as text; the front matter is what the engine reads. Field rules
here are the ones that need no other entry or data file; cross-entry and key-set checks live in
``kb.validate``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kb.versions import VersionError, parse_spec

AREAS: tuple[str, ...] = (
    "ray",
    "network",
    "install",
    "config",
    "rollout",
    "metrics",
    "memory",
    "data",
    "checkpoint",
    "tooling",
)

BODY_SECTIONS: tuple[str, ...] = ("What you see", "Why it happens", "Fix", "Check that it worked")

VERSIONED_PACKAGES: tuple[str, ...] = (
    "verl",
    "torch",
    "vllm",
    "sglang",
    "transformers",
    "ray",
    "flash_attn",
    "cuda",
    "tensordict",
    "python",
    "numpy",
)

ID_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

OverrideValue = str | int | float | bool | None | list[str | int | float | bool]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def _check_spec(value: str) -> str:
    try:
        parse_spec(value)
    except VersionError as exc:
        raise ValueError(str(exc)) from None
    return value


class Symptom(_Strict):
    """One line-level sign of the problem: a regex over a line, or an exception type."""

    regex: str | None = None
    exception: str | None = None
    message: str | None = Field(default=None, description="regex on the exception message")
    weight: float = Field(default=0.8, ge=0.0, le=1.0)
    said: bool = Field(
        default=False,
        description=(
            "the regex matches how people describe the problem, not a line a program prints: it is matched "
            "in pasted text and never searched for in a job directory's logs"
        ),
    )

    @model_validator(mode="after")
    def _one_kind(self) -> Symptom:
        if (self.regex is None) == (self.exception is None):
            raise ValueError("a symptom has exactly one of 'regex' or 'exception'")
        if self.said and self.regex is None:
            raise ValueError("'said' marks a regex symptom; an exception is always printed")
        if self.message is not None and self.exception is None:
            raise ValueError("'message' refines an 'exception' symptom; a regex symptom cannot have one")
        if self.exception is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.exception):
            raise ValueError(f"exception {self.exception!r} must be a bare class name like ValueError")
        return self


class MetricSignature(_Strict):
    """A pattern in a metric series: a threshold crossed, a trend, non-finite values or a flat line."""

    metric: str | list[str]
    above: float | None = None
    below: float | None = None
    trend: Literal["rising", "falling"] | None = None
    nonfinite: bool | None = None
    flat: float | None = None
    min_steps: int | None = Field(default=None, ge=1)
    change: float | None = Field(default=None, gt=0)
    """With ``trend``: how far the median of the last third must be from that of the first third, as a
    share of the larger of the two (default 0.5: a rise to double, a fall to half); a slow creep such
    as a memory leak wants less."""
    tolerance: float | None = Field(default=None, ge=0)
    """With ``flat``: how far from the value a point may be and still count as flat (default 1e-6)."""
    window: int | None = Field(default=None, ge=1)
    """With ``above``/``below``: how many trailing steps are judged (default: ``min_steps``, at least 5)."""
    share: float | None = Field(default=None, gt=0, le=1)
    """With ``above``/``below``: the share of the trailing window's steps that must be past the threshold
    (default 0.8); a state is sustained, an isolated dip of a noisy healthy run is not."""

    @model_validator(mode="after")
    def _one_test(self) -> MetricSignature:
        tests = [t for t in ("above", "below", "trend", "nonfinite", "flat") if getattr(self, t) is not None]
        if len(tests) != 1:
            raise ValueError("a metric signature has exactly one of above, below, trend, nonfinite or flat")
        if self.nonfinite is False:
            raise ValueError("'nonfinite' can only be true")
        if self.change is not None and self.trend is None:
            raise ValueError("'change' belongs to a 'trend' signature")
        if self.tolerance is not None and self.flat is None:
            raise ValueError("'tolerance' belongs to a 'flat' signature")
        if (self.window is not None or self.share is not None) and self.above is None and self.below is None:
            raise ValueError("'window' and 'share' belong to an 'above' or 'below' signature")
        return self

    @property
    def names(self) -> list[str]:
        return [self.metric] if isinstance(self.metric, str) else list(self.metric)

    @property
    def steps_needed(self) -> int:
        if self.min_steps is not None:
            return self.min_steps
        return 10 if self.trend is not None else 1


class VersionCheck(_Strict):
    version: str
    spec: str

    @field_validator("version")
    @classmethod
    def _known_package(cls, value: str) -> str:
        if value not in VERSIONED_PACKAGES:
            raise ValueError(f"unknown package {value!r}; known: {', '.join(VERSIONED_PACKAGES)}")
        return value

    _spec = field_validator("spec")(classmethod(lambda cls, v: _check_spec(v)))


class GpuCheck(_Strict):
    gpu: list[str] = Field(min_length=1)


class GpuNotCheck(_Strict):
    gpu_not: list[str] = Field(min_length=1)


class PlatformCheck(_Strict):
    platform: Literal["aarch64", "x86_64", "ppc64le"]


class OverrideCheck(_Strict):
    override: str
    equals: OverrideValue = None
    present: bool | None = None

    @model_validator(mode="after")
    def _one_test(self) -> OverrideCheck:
        if (self.present is None) == ("equals" not in self.model_fields_set):
            raise ValueError("an override check has exactly one of 'equals' or 'present'")
        return self


class EnvCheck(_Strict):
    env: str
    present: bool = True


class TextCheck(_Strict):
    text: str


Check = VersionCheck | GpuCheck | GpuNotCheck | PlatformCheck | OverrideCheck | EnvCheck | TextCheck


class Condition(_Strict):
    text: str = Field(min_length=3)
    check: Check | None = None


class Override(_Strict):
    key: str
    value: OverrideValue = Field(
        description="the value; with 'expr', the example shown when the job's values are unknown"
    )
    verl: str
    note: str | None = None
    expr: str | None = Field(
        default=None,
        description="the value as an expression over the job's resolved config (dotted keys, numbers, + - * / //, "
        "min, max, ceil, gcd, lcm), computed from the input's overrides and the release's defaults",
    )

    @field_validator("expr")
    @classmethod
    def _expr_parses(cls, value: str | None) -> str | None:
        if value is not None:
            from kb.fixexpr import ExprError, expr_keys

            try:
                expr_keys(value)
            except ExprError as exc:
                raise ValueError(f"expr {value!r}: {exc}") from None
        return value

    @field_validator("key")
    @classmethod
    def _bare_key(cls, value: str) -> str:
        if value.startswith(("+", "~")):
            raise ValueError(
                f"write the key without Hydra's prefix ({value.lstrip('+~')!r}); "
                "the version's key set decides whether '+' is needed"
            )
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", value):
            raise ValueError(f"{value!r} is not a dotted config key")
        return value

    _verl = field_validator("verl")(classmethod(lambda cls, v: _check_spec(v)))


class EnvVar(_Strict):
    """An environment variable that fixes (or diagnoses) the problem, e.g. NCCL_SOCKET_IFNAME=eth0.
    ``note`` says where it must be set (every node before ``ray start``, the launching shell, ...)."""

    name: str
    value: str
    note: str | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return (
            str(value).lower() if isinstance(value, bool) else str(value) if isinstance(value, int | float) else value
        )

    @field_validator("name")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", value):
            raise ValueError(f"{value!r} is not an environment variable name (upper case, digits, '_')")
        return value


class Alternative(_Strict):
    """Another way to fix it: its own block to copy, never pasted together with the main fix."""

    title: str = Field(min_length=3)
    overrides: list[Override] = Field(min_length=1)


class Fix(_Strict):
    overrides: list[Override] = Field(default_factory=list)
    env: list[EnvVar] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)

    def override_groups(self) -> list[tuple[tuple[object, ...], list[Override]]]:
        """(path in the front matter, overrides) of the main fix and of each alternative."""
        groups: list[tuple[tuple[object, ...], list[Override]]] = [(("fix", "overrides"), self.overrides)]
        groups += [(("fix", "alternatives", j, "overrides"), a.overrides) for j, a in enumerate(self.alternatives)]
        return groups

    @model_validator(mode="after")
    def _something(self) -> Fix:
        if not self.overrides and not self.actions and not self.env:
            raise ValueError("a fix needs at least one override, environment variable or action")
        return self


class FixedIn(_Strict):
    """A known bug of some releases: the first release that has the fix, and the pull request that made it.
    The entry's ``verl`` range is then the affected releases."""

    verl: str
    pr: str

    @field_validator("verl")
    @classmethod
    def _release(cls, value: str) -> str:
        if not re.fullmatch(r"\d+\.\d+\.\d+", value):
            raise ValueError(f"fixed_in.verl {value!r} must be a release number such as 0.6.0")
        return value

    @field_validator("pr")
    @classmethod
    def _pull(cls, value: str) -> str:
        if not re.fullmatch(r"https://github\.com/(?:verl-project|volcengine)/verl/pull/\d+", value):
            raise ValueError(f"fixed_in.pr {value!r} must be a verl pull request URL")
        return value


class FrontMatter(_Strict):
    """The machine-read part of an entry."""

    id: Annotated[str, Field(min_length=3, max_length=80)]
    title: Annotated[str, Field(min_length=8, max_length=160)]
    area: str
    verl: str = ">=0.4"
    symptoms: list[Symptom] = Field(default_factory=list)
    metrics: list[MetricSignature] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)
    fix: Fix
    questions: list[str] = Field(default_factory=list)
    sources: list[str] = Field(min_length=1)
    related: list[str] = Field(default_factory=list)
    fixed_in: FixedIn | None = None
    generic: bool = False
    """True for a failure any stack can hit (NCCL, CUDA OOM, shared memory, W&B, chat templates, Hydra,
    vLLM/Ray's own errors): claimed only when the input shows it comes from a verl job."""

    @field_validator("id")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not ID_PATTERN.fullmatch(value):
            raise ValueError(f"id {value!r} must be lowercase letters, digits and single dashes")
        return value

    @field_validator("area")
    @classmethod
    def _known_area(cls, value: str) -> str:
        if value not in AREAS:
            raise ValueError(f"unknown area {value!r}; known: {', '.join(AREAS)}")
        return value

    _verl = field_validator("verl")(classmethod(lambda cls, v: _check_spec(v)))

    @model_validator(mode="after")
    def _has_signal(self) -> FrontMatter:
        if not self.symptoms and not self.metrics:
            raise ValueError("an entry needs at least one symptom or metric signature")
        return self


class Entry(BaseModel):
    """A loaded entry: front matter, body sections and where it came from."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    meta: FrontMatter
    sections: dict[str, str]
    path: str

    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def title(self) -> str:
        return self.meta.title

    @property
    def area(self) -> str:
        return self.meta.area

    @property
    def cause(self) -> str:
        return self.sections.get("Why it happens", "")
