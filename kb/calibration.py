"""Confidence fitted on data: the map from what the engine knows of a candidate to the probability that
it is the problem the input shows, shipped as a small table (`kb/data/calibration.json`, written by
`verl-doctor eval tests/eval/real --split dev --fit`; the fit and its cross-validation are
:mod:`kb.calibration_fit`).

The hand-set fusion (:mod:`kb.scoring`) ranks candidates well but its numbers were never checked: on dev a
0.64 was right a third of the time, a 0.86 every time. A calibration turns the fused score (and, for
the logistic kinds, the evidence beside it) into that probability. Its thresholds come from the same fit:
`match` is the region whose first answers were right at least 97 % of the time under cross-validation
on dev (none when no region reaches it), and `possible` keeps nearly every right candidate.

This module is the runtime: plain Python, no scikit-learn and no numpy.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

#: The evidence a logistic calibration may weigh (all of them are in every candidate's features).
FEATURES: tuple[str, ...] = (
    "heuristic_logit",  # the hand-set fusion's score after provenance, as a logit
    "rule",  # the best symptom / exception / metric rule weight that fired
    "has_rule",
    "semantic",  # cosine similarity of the distilled input to the entry
    "lexical",  # BM25, scaled to the best entry
    "question",  # the input is a question in words, not a log
    "conditions_fail",
    "conditions_hold",
    "version_excluded",  # the input's verl release is outside the entry's range (or has its fix)
    "verl_evidence",  # the input shows verl itself: its frames, its config keys, its step lines
    "held_back",  # provenance held the candidate back (another stack, or a generic entry without verl evidence)
    "first",  # the fused score ranks it first among the input's candidates
)
CALIBRATION_FILE = "calibration.json"
FORMAT = 2
#: What `match` must reach on dev under cross-validation; a fit that cannot reach it never says `match`.
TARGET_PRECISION = 0.97
#: A `match` region must hold at least this many first answers on dev: fewer would be chance.
MIN_REGION = 10
#: No answer is certain (dev's surest tenth was right 98 % of the time), and 0.995 would read "1.00".
PROBABILITY_CAP = 0.99

Kind = Literal["isotonic", "platt", "logistic"]
#: How a calibration splits inputs: one map for all, or one for questions in words and one for logs.
#: ... or one for the fused order's first candidate and one for the others (a runner-up is right less often).
GROUPINGS: tuple[str, ...] = ("all", "kind", "rank")
_GROUP_NAMES = {"all": ("all",), "kind": ("question", "log"), "rank": ("first", "other")}


def logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def sigmoid(z: float) -> float:
    if z < -60:
        return 0.0
    return 1 / (1 + math.exp(-z))


def group_of(features: dict[str, float], grouping: str) -> str:
    if grouping == "kind":
        return "question" if features.get("question", 0.0) else "log"
    if grouping == "rank":
        return "first" if features.get("first", 0.0) else "other"
    return "all"


def group_names(grouping: str) -> tuple[str, ...]:
    return _GROUP_NAMES[grouping]


@dataclass(frozen=True)
class GroupMap:
    """One group's map. isotonic: breakpoints ``x`` (fused score) to ``y`` (probability), linear between
    them and flat outside (what scikit-learn's IsotonicRegression predicts); platt: ``a * logit(score) + b``;
    logistic: ``weights`` over ``names`` plus ``bias``."""

    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    a: float = 0.0
    b: float = 0.0
    names: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()
    bias: float = 0.0

    def isotonic(self, score: float) -> float:
        xs, ys = self.x, self.y
        if score <= xs[0]:
            return ys[0]
        if score >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_right(xs, score)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (score - x0) / (x1 - x0)


@dataclass(frozen=True)
class Calibration:
    kind: Kind
    grouping: str
    groups: dict[str, GroupMap]
    #: None: no region reached the target precision, so nothing is ever a `match`.
    match_threshold: float | None
    possible_threshold: float
    fitted_on: str = ""
    #: The cross-validated figures the fit chose it by (kept in the file for the record, never read).
    cv: dict[str, Any] = field(default_factory=dict, compare=False)

    def probability(self, features: dict[str, float]) -> float:
        """To three decimals, as shown (the fit chooses its thresholds among the values the engine shows),
        never above PROBABILITY_CAP."""
        g = self.groups[group_of(features, self.grouping)]
        score = features["score"]
        if self.kind == "isotonic":
            p = min(1.0, max(0.0, g.isotonic(score)))
        elif self.kind == "platt":
            p = sigmoid(g.a * logit(score) + g.b)
        else:
            p = sigmoid(g.bias + sum(w * features[n] for w, n in zip(g.weights, g.names, strict=True)))
        return round(min(p, PROBABILITY_CAP), 3)

    def is_match(self, probability: float) -> bool:
        return self.match_threshold is not None and probability >= self.match_threshold

    def to_json(self) -> dict[str, Any]:
        groups: dict[str, Any] = {}
        for name, g in sorted(self.groups.items()):
            if self.kind == "isotonic":
                groups[name] = {"x": list(g.x), "y": list(g.y)}
            elif self.kind == "platt":
                groups[name] = {"a": g.a, "b": g.b}
            else:
                groups[name] = {"features": list(g.names), "weights": list(g.weights), "bias": g.bias}
        return {
            "format": FORMAT,
            "kind": self.kind,
            "grouping": self.grouping,
            "groups": groups,
            "match_threshold": self.match_threshold,
            "possible_threshold": self.possible_threshold,
            "target_precision": TARGET_PRECISION,
            "fitted_on": self.fitted_on,
            "cv": self.cv,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        """Raises ValueError for a file of another format or one that names features the engine lacks."""
        if data.get("format") != FORMAT:
            raise ValueError(f"calibration format {data.get('format')!r}, not {FORMAT}: refit it")
        kind = data["kind"]
        grouping = data["grouping"]
        if kind not in ("isotonic", "platt", "logistic") or grouping not in GROUPINGS:
            raise ValueError(f"unknown calibration {kind!r} by {grouping!r}")
        groups: dict[str, GroupMap] = {}
        for name, g in data["groups"].items():
            if kind == "isotonic":
                x, y = tuple(float(v) for v in g["x"]), tuple(float(v) for v in g["y"])
                if not x or len(x) != len(y) or list(x) != sorted(x):
                    raise ValueError(f"group {name}: breakpoints must be sorted and paired")
                groups[name] = GroupMap(x=x, y=y)
            elif kind == "platt":
                groups[name] = GroupMap(a=float(g["a"]), b=float(g["b"]))
            else:
                names = tuple(str(n) for n in g["features"])
                if not set(names) <= set(FEATURES) or len(names) != len(g["weights"]):
                    raise ValueError(f"group {name}: features the engine does not make; refit it")
                groups[name] = GroupMap(
                    names=names, weights=tuple(float(w) for w in g["weights"]), bias=float(g["bias"])
                )
        needed = set(group_names(grouping))
        if set(groups) != needed:
            raise ValueError(f"groups {sorted(groups)}, expected {sorted(needed)}")
        match = data["match_threshold"]
        return cls(
            kind=kind,
            grouping=grouping,
            groups=groups,
            match_threshold=None if match is None else float(match),
            possible_threshold=float(data["possible_threshold"]),
            fitted_on=str(data.get("fitted_on", "")),
            cv=dict(data.get("cv") or {}),
        )


def features(
    heuristic: float,
    rule: float,
    semantic: float,
    lexical: float,
    question: bool,
    fails: int,
    holds: int,
    version_excluded: bool,
    verl_evidence: bool,
) -> dict[str, float]:
    """A candidate's features before provenance; :func:`finish` adds the fused score after it."""
    return {
        "heuristic": heuristic,  # kept beside the model's inputs: the candidate floor is on it
        "rule": rule,
        "has_rule": float(rule > 0),
        "semantic": semantic,
        "lexical": lexical,
        "question": float(question),
        "conditions_fail": float(fails),
        "conditions_hold": float(holds),
        "version_excluded": float(version_excluded),
        "verl_evidence": float(verl_evidence),
    }


def finish(features: dict[str, float], score: float, held_back: bool, first: bool) -> None:
    """Add what is known once provenance has spoken: the fused score a user would see without a calibration,
    and whether that score ranks the candidate first."""
    features["score"] = score
    features["heuristic_logit"] = logit(score)
    features["held_back"] = float(held_back)
    features["first"] = float(first)


def bundled_path() -> Path:
    return Path(str(resources.files("kb") / "data" / CALIBRATION_FILE))


def load(path: Path | None = None) -> Calibration | None:
    """The shipped calibration, or None when there is none or it is unreadable (the hand-set fusion stands)."""
    path = path or bundled_path()
    try:
        return Calibration.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
