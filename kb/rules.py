"""The rules layer: symptom regexes, exception types, metric signatures and condition checks."""

from __future__ import annotations

import functools
import itertools
import math
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import regex

from kb import scoring as S
from kb.entry import (
    Condition,
    Entry,
    EnvCheck,
    GpuCheck,
    GpuNotCheck,
    MetricSignature,
    OverrideCheck,
    PlatformCheck,
    TextCheck,
    VersionCheck,
)
from kb.loglines import Line
from kb.patterns import CONFIRM_TIMEOUT, MAX_CONFIRM_LINE, PatternSet
from kb.result import ConditionStatus, Evidence
from kb.signals import MetricPoint, Signals, is_finite
from kb.versions import VersionError, in_range


@dataclass
class RuleHit:
    entry_id: str
    score: float
    evidence: list[Evidence] = field(default_factory=list)


class RuleEngine:
    """All symptom regexes of a corpus compiled once; evaluates entries against lines and signals."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = {e.id: e for e in entries}
        patterns: list[str] = []
        self._owners: list[tuple[str, float]] = []
        #: What a job directory's logs are searched for: every regex but the phrases people write (``said``),
        #: which no program prints and which cost the byte scan most (caseless words with gaps).
        self.scan_patterns: list[str] = []
        for e in entries:
            for s in e.meta.symptoms:
                if s.regex:
                    patterns.append(s.regex)
                    self._owners.append((e.id, s.weight))
                    if not s.said:
                        self.scan_patterns.append(s.regex)
        self.patterns = PatternSet(patterns)
        self._exc: dict[str, list[tuple[str, float, regex.Pattern[str] | None]]] = defaultdict(list)
        for e in entries:
            for s in e.meta.symptoms:
                if s.exception:
                    msg = regex.compile(s.message) if s.message else None
                    self._exc[s.exception].append((e.id, s.weight, msg))

    def evaluate(self, lines: Sequence[Line], signals: Signals) -> dict[str, RuleHit]:
        hits: dict[str, RuleHit] = {}
        weights: dict[str, list[float]] = defaultdict(list)

        def add(entry_id: str, weight: float, ev: Evidence) -> None:
            hit = hits.setdefault(entry_id, RuleHit(entry_id, 0.0))
            if len(hit.evidence) < 12 and not any(
                x.line_no == ev.line_no and x.kind == ev.kind for x in hit.evidence if ev.line_no
            ):
                hit.evidence.append(ev)
            weights[entry_id].append(weight)

        for m in self.patterns.match_lines([ln.text for ln in lines], first_line_no=lines[0].no if lines else 1):
            entry_id, weight = self._owners[m.pattern_id]
            add(
                entry_id,
                weight,
                Evidence(
                    kind="regex",
                    text=lines[m.line_no - lines[0].no].raw.strip()[:500],
                    line_no=m.line_no,
                    pattern=self.patterns.patterns[m.pattern_id],
                ),
            )
        for exc in signals.exceptions:
            for entry_id, weight, msg in self._exc.get(exc.type, []):
                if msg is not None:
                    try:
                        if not msg.search(exc.message, timeout=CONFIRM_TIMEOUT):
                            continue
                    except TimeoutError:
                        continue
                add(
                    entry_id,
                    weight,
                    Evidence(
                        kind="exception", text=f"{exc.type}: {exc.message}"[:500], line_no=exc.line_no, pattern=exc.type
                    ),
                )
        for entry in self.entries.values():
            for sig in entry.meta.metrics:
                ev = evaluate_metric(sig, signals.metrics)
                if ev is not None:
                    add(entry.id, metric_weight(sig), ev)
        for entry_id, ws in weights.items():
            distinct = sorted(set(ws), reverse=True)
            # Several independent signs of the same problem add up, with diminishing returns.
            score = distinct[0]
            for w in distinct[1:3]:
                score += (1 - score) * w * S.RULE_SUPPORT_SHARE
            hits[entry_id].score = min(score, S.RULE_SCORE_CAP)
        return hits


def metric_weight(sig: MetricSignature) -> float:
    if sig.nonfinite:
        return S.METRIC_NONFINITE_WEIGHT
    if sig.trend is not None:
        return S.METRIC_TREND_WEIGHT
    return S.METRIC_LEVEL_WEIGHT


def _describe(sig: MetricSignature) -> str:
    if sig.above is not None:
        return f"above {sig.above}"
    if sig.below is not None:
        return f"below {sig.below}"
    if sig.trend is not None:
        return f"{sig.trend} over {sig.steps_needed}+ steps"
    if sig.nonfinite:
        return "NaN or inf"
    return f"flat at {sig.flat}"


#: Default relative change a trend must reach between the first and the last third of its series.
TREND_CHANGE = 0.5
#: One-sided 5 % level of the Mann-Kendall statistic: a series of noise passes 1 time in 20 on this alone,
#: and the required change between its thirds rules most of those out.
_MK_Z = 1.645
#: Longer series are thinned to this many evenly spaced points (the test is quadratic).
_MK_POINTS = 200


def _trend(points: list[MetricPoint], rising: bool, min_change: float = TREND_CHANGE) -> bool:
    """A trend: the last third's median beyond the first third's by ``min_change`` (relative), and the
    Mann-Kendall test (every later point against every earlier one) says the order is no accident. Unlike
    counting steps that go the right way, it holds for a noisy series that creeps."""
    values = [p.value for p in points if is_finite(p.value)]
    if len(values) > _MK_POINTS:
        values = [values[i * (len(values) - 1) // (_MK_POINTS - 1)] for i in range(_MK_POINTS)]
    n = len(values)
    if n < 3:
        return False
    third = max(1, n // 3)
    head, tail = sorted(values[:third]), sorted(values[-third:])
    h, t = head[len(head) // 2], tail[len(tail) // 2]
    change = (t - h) if rising else (h - t)
    if change / max(abs(h), abs(t), 1e-9) < min_change:
        return False
    if n < 4:  # too few points for the test to say anything: every step must agree
        return all((b > a if rising else b < a) for a, b in itertools.pairwise(values))
    s = sum((b > a) - (b < a) for i, a in enumerate(values) for b in values[i + 1 :])
    z = (s - (s > 0) + (s < 0)) / math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
    return z > _MK_Z if rising else z < -_MK_Z


#: A level test judges the trailing window: this share of its steps past the threshold (and its median too).
LEVEL_SHARE = 0.8
#: The trailing window has at least this many steps (``min_steps`` when larger).
LEVEL_WINDOW = 5
#: Or this share of all the steps of the series, wherever they are.
LEVEL_SHARE_ALL = 0.5


def _past(sig: MetricSignature, value: float) -> bool:
    if not is_finite(value):
        return False
    return value > sig.above if sig.above is not None else sig.below is not None and value < sig.below


def _level(sig: MetricSignature, name: str, series: list[MetricPoint]) -> Evidence | None:
    """A sustained level: past the threshold over the trailing window (``share`` of its steps, and its
    median), or over at least half of all the steps; never a few isolated points of a noisy healthy run."""
    need = sig.steps_needed
    share = sig.share if sig.share is not None else LEVEL_SHARE
    window = series[-(sig.window or max(need, LEVEL_WINDOW)) :]
    past = [p for p in window if _past(sig, p.value)]
    where = f"of the last {len(window)} steps"
    finite = [p.value for p in window if is_finite(p.value)]
    sustained = len(window) >= need and len(past) >= share * len(window)
    if not (sustained and finite and _past(sig, statistics.median(finite))):
        window, where = series, f"of {len(series)} steps"
        past = [p for p in series if _past(sig, p.value)]
        if len(past) < need or len(past) < LEVEL_SHARE_ALL * len(series):
            return None
        finite = [p.value for p in series if is_finite(p.value)]
        since = past[0].step
    else:
        since = _sustained_since(sig, series, share)
    values = ", ".join(f"{p.step}:{p.value:.4g}" for p in past[-4:])
    return Evidence(
        kind="metric",
        text=f"{name} {_describe(sig)} at {len(past)} {where}, since step {since} "
        f"(median {statistics.median(finite):.4g}; step:value {values})",
        line_no=past[-1].line_no,
        pattern=f"{name} {_describe(sig)}",
        steps=(since, window[-1].step),
    )


def _sustained_since(sig: MetricSignature, series: list[MetricPoint], share: float) -> int:
    """The first step of the longest tail of the series that is past the threshold at that step and at
    ``share`` of its steps: where the sustained state began."""
    since, past = series[-1].step, 0
    for i in range(len(series) - 1, -1, -1):
        hit = _past(sig, series[i].value)
        past += hit
        if hit and past >= share * (len(series) - i):
            since = series[i].step
    return since


def evaluate_metric(sig: MetricSignature, metrics: dict[str, list[MetricPoint]]) -> Evidence | None:
    for name in sig.names:
        series = metrics.get(name)
        if not series:
            continue
        need = sig.steps_needed
        chosen: list[MetricPoint] = []
        if sig.above is not None or sig.below is not None:
            ev = _level(sig, name, series)
            if ev is not None:
                return ev
            continue
        if sig.nonfinite:
            chosen = [p for p in series if not is_finite(p.value)]
        elif sig.flat is not None:
            tail = series[-max(need, 3) :]
            tolerance = sig.tolerance if sig.tolerance is not None else 1e-6
            if len(series) >= need and all(
                is_finite(p.value) and math.isclose(p.value, sig.flat, abs_tol=tolerance) for p in tail
            ):
                chosen = tail
        elif (
            sig.trend is not None
            and len(series) >= need
            and _trend(series, sig.trend == "rising", sig.change if sig.change is not None else TREND_CHANGE)
        ):
            chosen = series
        if len(chosen) >= need and chosen:
            last = chosen[-1]
            values = ", ".join(f"{p.step}:{p.value:.4g}" for p in chosen[-4:])
            return Evidence(
                kind="metric",
                text=f"{name} {_describe(sig)} at {len(chosen)} step(s) (step:value {values})",
                line_no=last.line_no,
                pattern=f"{name} {_describe(sig)}",
                steps=(chosen[0].step, last.step),
            )
    return None


def check_condition(cond: Condition, signals: Signals, lines: Sequence[Line]) -> ConditionStatus:
    check = cond.check
    if check is None:
        return "unknown"
    if isinstance(check, VersionCheck):
        found = signals.versions.get(check.version)
        if found is None:
            return "unknown"
        try:
            return "holds" if in_range(found, check.spec) else "fails"
        except VersionError:
            return "unknown"
    if isinstance(check, GpuCheck | GpuNotCheck):
        if not signals.gpus:
            return "unknown"
        wanted = check.gpu if isinstance(check, GpuCheck) else check.gpu_not
        hit = any(w.lower() in g.lower() for g in signals.gpus for w in wanted)
        return "holds" if hit == isinstance(check, GpuCheck) else "fails"
    if isinstance(check, PlatformCheck):
        if signals.platform is None:
            return "unknown"
        return "holds" if signals.platform == check.platform else "fails"
    if isinstance(check, OverrideCheck):
        if not signals.overrides:
            return "unknown"
        value = signals.overrides.get(check.override)
        if check.present is not None:
            return "holds" if (value is not None) == check.present else "fails"
        if value is None:
            return "unknown"
        return "holds" if value.lower() == str(check.equals).lower() else "fails"
    if isinstance(check, EnvCheck):
        seen = check.env in signals.env
        if not seen and not check.present:
            return "unknown"
        return "holds" if seen == check.present else ("unknown" if not seen else "fails")
    if isinstance(check, TextCheck):
        return "holds" if text_condition_holds(check.text, lines) else "unknown"
    return "unknown"


#: Seconds one text condition may spend over all the lines; past it the condition stays "unknown".
CONDITION_BUDGET = 0.25


@functools.lru_cache(maxsize=1024)
def _condition_regex(pattern: str) -> regex.Pattern[str] | None:
    try:
        return regex.compile(pattern)
    except regex.error:
        return None


def text_condition_holds(pattern: str, lines: Sequence[Line]) -> bool:
    """Whether ``pattern`` is found on one of ``lines``: the ``regex`` engine under a timeout per line and a
    budget for all of them (a corpus regex never runs unbounded), each line cut as for the symptoms."""
    rx = _condition_regex(pattern)
    if rx is None:
        return False
    deadline = time.monotonic() + CONDITION_BUDGET
    for ln in lines:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            if rx.search(ln.text[:MAX_CONFIRM_LINE], timeout=min(CONFIRM_TIMEOUT, remaining)):
                return True
        except TimeoutError:
            continue
    return False
