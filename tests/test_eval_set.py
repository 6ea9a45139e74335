"""The dev set in tests/eval/cases must keep the engine's quality targets."""

from __future__ import annotations

from kb.evaluation import load_cases, run_eval
from tests.conftest import REPO


def test_dev_set_targets(diagnoser):
    cases = load_cases([REPO / "tests" / "eval" / "cases"])
    assert len(cases) >= 80
    assert sum(1 for c in cases if not c.expected) >= 25
    report = run_eval(diagnoser, cases)
    assert not report.unknown_ids, report.unknown_ids
    summary = f"top1={report.top1:.3f} top3={report.top3:.3f} neg={report.negatives_confident:.3f}"
    assert report.top1 >= 0.90, summary
    assert report.top3 >= 0.97, summary
    assert report.negatives_confident <= 0.05, summary
