"""The fitted confidence: fit on real dev cases, thresholds from the fit, the runtime applying it."""

from __future__ import annotations

import copy
import json
import math

import pytest

from kb import calibration
from kb.benchmark import fit_calibration, load_split, score
from tests.conftest import REPO

REAL = REPO / "tests" / "eval" / "real"


def test_a_probability_is_the_logistic_of_the_weighted_features() -> None:
    cal = calibration.Calibration(
        weights=tuple(1.0 if n == "rule" else 0.0 for n in calibration.FEATURES),
        bias=-0.5,
        match_threshold=0.9,
        possible_threshold=0.1,
        fitted_on="test",
    )
    f = calibration.features(0.5, 0.5, 0.0, 0.0, False, 0, 0, False, True)
    assert cal.probability(f) == pytest.approx(0.5)
    assert calibration.Calibration.from_json(json.loads(json.dumps(cal.to_json()))) == cal
    with pytest.raises(ValueError, match="other features"):
        calibration.Calibration.from_json({**cal.to_json(), "features": ["rule"]})


def test_fit_on_dev_cases_gives_thresholds_the_engine_then_uses(diagnoser) -> None:  # type: ignore[no-untyped-def]
    dev = load_split(REAL, "dev")
    # Every tenth case keeps the test short; the shipped fit uses the whole split.
    sample = dev[::10]
    plain = copy.copy(diagnoser.without_retriever())
    fitted = fit_calibration(plain, sample, "test sample")
    assert len(fitted.weights) == len(calibration.FEATURES) and all(math.isfinite(w) for w in fitted.weights)
    assert 0.0 <= fitted.possible_threshold <= fitted.match_threshold <= 1.0
    plain.calibration = fitted
    report = score(lambda text: plain.diagnose(text, top=5), sample, set(plain.entries), "sample")
    # Where the fit found no region of 97 % precision, nothing is claimed; else what is claimed is in it.
    if fitted.match_threshold >= 1.0:
        assert report.confident.k == 0 and report.negatives_confident.k == 0
    else:
        assert report.match_precision_all.value >= 0.9, report.match_precision_all
    for row in report.reliability:
        assert 0.0 <= row.mean_confidence <= 1.0 and row.answers > 0
    assert 0.0 <= report.ece <= 1.0


def test_fit_refuses_the_holdout(runner) -> None:  # type: ignore[no-untyped-def]
    from kb.cli import main

    result = runner.invoke(main, ["eval", str(REAL), "--split", "holdout", "--fit"])
    assert result.exit_code == 2 and "never fitted on" in result.output
