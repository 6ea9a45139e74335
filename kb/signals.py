"""From what users paste to typed signals: lines cleaned of Ray/ANSI noise, the exception chain,
Hydra errors, versions, GPUs, overrides and metric series."""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Sequence
from typing import NamedTuple

from pydantic import BaseModel, Field

from kb.loglines import (
    EXCEPTION_LINE,
    STEP_ITEM,
    STEP_LINE,
    WRAPPER_EXCEPTIONS,
    Line,
    parse_number,
)
from kb.overrides import launch_overrides, parse_override


class ExceptionInfo(BaseModel):
    type: str
    message: str
    line_no: int
    wrapped_in: str | None = None  # RayTaskError / ActorDiedError wrapper around it


class HydraError(BaseModel):
    kind: str  # could_not_override | not_in_struct | could_not_append | missing_mandatory | full_key | ...
    key: str | None
    line_no: int


class Frame(BaseModel):
    path: str
    line: int
    function: str
    line_no: int

    @property
    def is_verl(self) -> bool:
        return "/verl/" in self.path or self.path.startswith("verl/")


class MetricPoint(NamedTuple):
    """One step of a metric series. A tuple, not a model: a job log holds a hundred thousand of them, and
    building each as a validated model cost more than scanning the bytes they came from."""

    step: int
    value: float
    line_no: int


class Signals(BaseModel):
    """Everything the rules and conditions can read from an input."""

    exceptions: list[ExceptionInfo] = Field(default_factory=list)
    hydra: list[HydraError] = Field(default_factory=list)
    frames: list[Frame] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    gpus: list[str] = Field(default_factory=list)
    platform: str | None = None
    env: list[str] = Field(default_factory=list)
    overrides: dict[str, str] = Field(default_factory=dict)
    metrics: dict[str, list[MetricPoint]] = Field(default_factory=dict)
    line_count: int = 0

    @property
    def primary_exception(self) -> ExceptionInfo | None:
        """The innermost cause: the last exception printed that is not a wrapper."""
        for exc in reversed(self.exceptions):
            if exc.type not in WRAPPER_EXCEPTIONS:
                return exc
        return self.exceptions[-1] if self.exceptions else None


_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
_HYDRA = [
    ("could_not_override", re.compile(r"Could not override '(?P<key>[^']+)'")),
    ("not_in_struct", re.compile(r"Key '(?P<key>[^']+)' is not in struct")),
    ("could_not_append", re.compile(r"Could not append to config\. An item is already at '(?P<key>[^']+)'")),
    ("missing_mandatory", re.compile(r"Missing mandatory value: (?P<key>\S+)")),
    ("full_key", re.compile(r"^\s*full_key: (?P<key>\S+)")),
    ("instantiate", re.compile(r"Error in call to target '(?P<key>[^']+)'")),
    ("overrides", re.compile(r"Error executing job with overrides: (?P<key>\[.*\])")),
]
_VERSION_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (pkg, re.compile(rx, re.IGNORECASE))
    for pkg, rx in [
        ("verl", r"\bverl(?:==|\s+version[:=]?\s*|\s+v|-)(\d+\.\d+\.\d+(?:\.(?:dev|post)\d*)?)"),
        ("verl", r"\bverl[:=]\s*(\d+\.\d+\.\d+)"),
        ("torch", r"\b(?:torch|pytorch)(?:==|\s+version[:=]?\s*|:\s*|\s+)(\d+\.\d+(?:\.\d+)?)(?:\+\w+)?"),
        ("vllm", r"\bvllm(?:==|\s+version[:=]?\s*|:\s*|\s+v?)(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)"),
        ("vllm", r"vLLM API server version (\d+\.\d+(?:\.\d+)?)"),
        ("sglang", r"\bsglang(?:==|\s+version[:=]?\s*|:\s*|\s+v?)(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)"),
        ("transformers", r"\btransformers(?:==|\s+version[:=]?\s*|:\s*|\s+)(\d+\.\d+(?:\.\d+)?)"),
        ("ray", r"\bray(?:==|\s+version[:=]?\s*|:\s*)(\d+\.\d+(?:\.\d+)?)"),
        ("flash_attn", r"\bflash[-_]attn(?:==|\s+version[:=]?\s*|:\s*|\s+)(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)"),
        ("cuda", r"\bCUDA Version:\s*(\d+\.\d+)"),
        ("cuda", r"\bcuda(?:==|\s+version[:=]?\s*|:\s*|\s+)(\d+\.\d+)"),
        ("tensordict", r"\btensordict(?:==|\s+version[:=]?\s*|:\s*|\s+)(\d+\.\d+(?:\.\d+)?)"),
        ("numpy", r"\bnumpy(?:==|\s+version[:=]?\s*|:\s*)(\d+\.\d+(?:\.\d+)?)"),
        ("python", r"\bPython\s+(3\.\d+(?:\.\d+)?)"),
        ("python", r"/python(3\.\d+)/(?:site|dist)-packages/"),
    ]
]
_GPU = re.compile(
    r"\b(?:NVIDIA\s+|Tesla\s+)?(A100|A800|H100|H800|H200|H20|GH200|GB200|B200|B100|L20|L40S|L40|L4|A10G|A10|A30|A40|"
    r"V100|T4|RTX\s?\d{4}(?:\s?Ti)?|MI300X?|MI250X?|910B)\b"
)
_PLATFORM = re.compile(r"\b(aarch64|arm64|x86_64|ppc64le)\b")
_ENV = re.compile(r"\b((?:SLURM|CUDA|NCCL|GLOO|RAY|VLLM|VERL|HYDRA|WANDB|HF|TORCH)_[A-Z0-9_]+)=")
_SLURM_HINT = re.compile(r"^(?:srun|slurmstepd|sbatch|salloc):|SLURM_JOB_ID")
_PY_VALUE = re.compile(r"np\.\w+\(([^()]*)\)")


def _add_metric(signals: Signals, key: str, step: int, value: float, line_no: int) -> None:
    signals.metrics.setdefault(key, []).append(MetricPoint(step=step, value=value, line_no=line_no))


def _parse_step_line(signals: Signals, line: Line) -> bool:
    m = STEP_LINE.search(line.text)
    if not m:
        return False
    step = int(m["step"])
    for item in m["rest"].split(" - "):
        im = STEP_ITEM.match(item.strip())
        if im:
            value = parse_number(im["v"])
            if value is not None:
                _add_metric(signals, im["k"].strip(), step, value, line.no)
    return True


def _parse_jsonl_metrics(signals: Signals, line: Line) -> bool:
    text = line.text.strip()
    if not (text.startswith("{") and '"step"' in text):
        return False
    try:
        obj = json.loads(text)
    except ValueError:
        return False
    if not isinstance(obj, dict) or not isinstance(obj.get("step"), int):
        return False
    data = obj.get("data", obj)
    if not isinstance(data, dict):
        return False
    for key, value in data.items():
        numeric = isinstance(value, bool | int | float) and key != "step"
        if numeric or (isinstance(value, str) and value.lower() in ("nan", "inf", "-inf")):
            _add_metric(signals, key, obj["step"], float(value), line.no)
    return True


def _hydra_overrides(text: str) -> list[str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return [t.strip(" '\"") for t in text.strip("[]").split(",") if "=" in t]
    return [str(v) for v in value] if isinstance(value, list) else []


def extract_signals(lines: Sequence[Line]) -> Signals:
    signals = Signals(line_count=len(lines))
    gpus: list[str] = []
    env: list[str] = []
    override_texts: list[str] = []
    for line in lines:
        text = line.text
        if not text.strip():
            continue
        if _parse_step_line(signals, line) or _parse_jsonl_metrics(signals, line):
            continue
        stripped = text.strip()
        m = EXCEPTION_LINE.match(stripped)
        if m and (m["msg"] is not None or m["inner"] or stripped == m.group(0)) and len(stripped) < 4000:
            exc_type = m["type"]
            message = (m["msg"] or "").strip()
            inner = m["inner"]
            if inner and exc_type in WRAPPER_EXCEPTIONS:
                signals.exceptions.append(
                    ExceptionInfo(type=inner.split(".")[-1], message=message, line_no=line.no, wrapped_in=exc_type)
                )
            elif not (exc_type.endswith("Warning") and not message):
                signals.exceptions.append(ExceptionInfo(type=exc_type, message=message, line_no=line.no))
        fm = _FRAME.match(text)
        if fm:
            signals.frames.append(Frame(path=fm["path"], line=int(fm["line"]), function=fm["fn"], line_no=line.no))
        for kind, rx in _HYDRA:
            hm = rx.search(text)
            if hm:
                if kind == "overrides":
                    override_texts += _hydra_overrides(hm["key"])
                else:
                    signals.hydra.append(HydraError(kind=kind, key=hm["key"], line_no=line.no))
        for pkg, rx in _VERSION_PATTERNS:
            if pkg not in signals.versions:
                vm = rx.search(text)
                if vm:
                    signals.versions[pkg] = vm.group(1)
        for g in _GPU.findall(text):
            name = re.sub(r"\s+", " ", g)
            if name not in gpus:
                gpus.append(name)
        if signals.platform is None:
            pm = _PLATFORM.search(text)
            if pm:
                signals.platform = "aarch64" if pm.group(1) == "arm64" else pm.group(1)
        for name in _ENV.findall(text):
            if name not in env:
                env.append(name)
        if _SLURM_HINT.search(text) and "SLURM_JOB_ID" not in env:
            env.append("SLURM_JOB_ID")
    # Structured sources only: Hydra's overrides list (above) and the launch command lines.
    override_texts += launch_overrides(ln.text for ln in lines)
    for item in override_texts:
        parsed = parse_override(item)
        if parsed is not None and parsed.value is not None:
            signals.overrides[parsed.key] = parsed.value.strip("'\"")
    signals.gpus = gpus
    signals.env = env
    for series in signals.metrics.values():
        series.sort(key=lambda p: p.step)
    return signals


def is_finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))
