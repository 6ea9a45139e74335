"""Confidence fitted on data: a logistic model over what the engine knows of a candidate, shipped as
coefficients (`kb/data/calibration.json`, written by `verl-doctor eval tests/eval/real --split dev --fit`).

The hand-set fusion in the engine gives a score whose values no data ever checked; this turns it and the
evidence beside it into the probability that the candidate is the problem the input shows, measured on
the real benchmark's dev split. The thresholds come from the same fit: `match` is the region whose
first answers were right at least 97 % of the time on dev, `possible` keeps nearly every right candidate.
The runtime needs numpy only; the fit needs scikit-learn (the dev extra).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

FEATURES: tuple[str, ...] = (
    "heuristic_logit",  # the hand-set fusion's score, as a logit
    "rule",  # the best symptom / exception / metric rule weight that fired
    "has_rule",
    "semantic",  # cosine similarity of the distilled input to the entry
    "lexical",  # BM25, scaled to the best entry
    "question",  # the input is a question in words, not a log
    "conditions_fail",
    "conditions_hold",
    "version_excluded",  # the input's verl release is outside the entry's range (or has its fix)
    "verl_evidence",  # the input shows verl itself: its frames, its config keys, its step lines
)
CALIBRATION_FILE = "calibration.json"
#: What `match` must reach on dev; a fit that cannot reach it never says `match`.
TARGET_PRECISION = 0.97


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class Calibration:
    weights: tuple[float, ...]
    bias: float
    match_threshold: float
    possible_threshold: float
    fitted_on: str

    def probability(self, features: dict[str, float]) -> float:
        z = self.bias + sum(w * features[name] for w, name in zip(self.weights, FEATURES, strict=True))
        return 1 / (1 + math.exp(-z)) if z > -60 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(FEATURES),
            "weights": list(self.weights),
            "bias": self.bias,
            "match_threshold": self.match_threshold,
            "possible_threshold": self.possible_threshold,
            "fitted_on": self.fitted_on,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        if tuple(data["features"]) != FEATURES:
            raise ValueError("the calibration was fitted on other features; refit it")
        return cls(
            weights=tuple(float(w) for w in data["weights"]),
            bias=float(data["bias"]),
            match_threshold=float(data["match_threshold"]),
            possible_threshold=float(data["possible_threshold"]),
            fitted_on=str(data.get("fitted_on", "")),
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
    return {
        "heuristic": heuristic,  # kept beside the model's inputs: the candidate floor is on it
        "heuristic_logit": _logit(heuristic),
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


def bundled_path() -> Path:
    return Path(str(resources.files("kb") / "data" / CALIBRATION_FILE))


def load(path: Path | None = None) -> Calibration | None:
    """The shipped calibration, or None when there is none (the hand-set fusion then stands)."""
    path = path or bundled_path()
    try:
        return Calibration.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def fit(rows: list[tuple[dict[str, float], int]], firsts: list[tuple[dict[str, float], int]], note: str) -> Calibration:
    """Fit on every candidate of every dev case (``rows``: features, 1 when it is an expected entry); set
    the thresholds on the cases' first answers (``firsts``) and on the right candidates."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    x = np.array([[f[name] for name in FEATURES] for f, _ in rows])
    y = np.array([label for _, label in rows])
    model = LogisticRegression(C=1.0, max_iter=2000, class_weight=None)
    model.fit(x, y)
    draft = Calibration(tuple(float(w) for w in model.coef_[0]), float(model.intercept_[0]), 1.0, 0.0, note)
    right = sorted(draft.probability(f) for f, label in rows if label)
    # `possible` keeps 95 % of the right candidates: the rest are too weak to show.
    possible = right[int(0.05 * len(right))] if right else 0.5
    scored = sorted(((draft.probability(f), label) for f, label in firsts), reverse=True)
    match = 1.0
    hits = 0
    for i, (p, label) in enumerate(scored, 1):
        hits += label
        # The lowest threshold above which the first answers were right at least TARGET_PRECISION of the time,
        # over at least 10 answers (fewer would be chance).
        if i >= 10 and hits / i >= TARGET_PRECISION:
            match = p
    return Calibration(draft.weights, draft.bias, max(match, possible), min(possible, match), note)
