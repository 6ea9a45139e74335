"""The grammar of verl's console lines, without models: the prefixes Ray, ranks, SLURM and ANSI colours
add, exception lines and step lines. The scanner's worker processes need only this much."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Lines longer than this are cut: no verl message needs more, and regexes stay fast.
MAX_LINE = 8192

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
# (TaskRunner pid=123) / (WorkerDict pid=1, ip=10.0.0.1) / (raylet) / (pid=12, ip=...) / (WorkerDict pid=1) [rank0]:
_RAY_PREFIX = re.compile(
    r"^(?:\((?:[A-Za-z_][\w.:]*(?:\s+pid=\d+)?|pid=\d+)(?:,\s*ip=[\w.:-]+)?(?:,\s*repeated \d+x[^)]*)?\)\s?)+"
)
_RANK_PREFIX = re.compile(r"^\[?rank\s?\d+\]?:\s?")


@dataclass(frozen=True)
class Line:
    no: int  # 1-based line number in the input
    raw: str
    text: str  # ANSI, Ray worker and rank prefixes removed


def clean_line(raw: str) -> str:
    text = _ANSI.sub("", raw[:MAX_LINE]).rstrip("\r")
    for _ in range(3):
        stripped = _RAY_PREFIX.sub("", text)
        stripped = _RANK_PREFIX.sub("", stripped)
        if stripped == text:
            break
        text = stripped
    return text


def split_lines(text: str) -> list[Line]:
    return [Line(i + 1, raw, clean_line(raw)) for i, raw in enumerate(text.splitlines())]


WRAPPER_EXCEPTIONS = {"RayTaskError", "RayActorError", "ActorDiedError", "HydraException", "InstantiationException"}

EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*(?P<type>[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Warning|Fault|Failure)"
    r"|MissingMandatoryValue|BdbQuit|StopIteration|KeyError|PackageNotFoundError|OutOfMemoryError)"
    r"(?:\((?P<inner>[A-Za-z_][\w.]*)\))?(?::\s?(?P<msg>.*))?$"
)

STEP_LINE = re.compile(r"(?:^|\s)step:(?P<step>\d+) - (?P<rest>.*)$")
STEP_ITEM = re.compile(
    r"^(?P<k>[^\s:][^:]*?):(?:np\.\w+\(|torch\.tensor\()?(?P<v>-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan|True|False))\)?$"
)


def parse_number(text: str) -> float | None:
    if text in ("True", "False"):
        return 1.0 if text == "True" else 0.0
    try:
        return float(text)
    except ValueError:
        return None
