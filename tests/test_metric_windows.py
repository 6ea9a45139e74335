"""Metric signatures judge a sustained state (issue 16 item 4): a level test holds over the trailing window
(or over most of the steps), with those steps as evidence; isolated points of a noisy healthy run do not."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from kb.cli import main
from kb.entry import MetricSignature
from kb.rules import evaluate_metric
from kb.signals import MetricPoint
from tests.conftest import FIXTURES


def _step_log(entropy: list[float]) -> str:
    """verl's console step lines (the TaskRunner prefix, `step:N - key:value`, np.float64 values)."""
    rng = random.Random(7)
    return "".join(
        f"(TaskRunner pid=3165) step:{i + 1} - actor/entropy:{e!r}"
        f" - actor/pg_loss:np.float64({rng.uniform(-0.01, 0.01)!r}) - critic/score/mean:{rng.uniform(0.5, 0.7)!r}"
        f" - response_length/mean:{rng.uniform(150, 180)!r}\n"
        for i, e in enumerate(entropy)
    )


def _match(runner: Any, tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "steps.log"
    path.write_text(text)
    out = runner.invoke(main, ["match", "--json", "--no-semantic", "--top", "10", str(path)])
    assert out.exit_code in (0, 1), out.output
    return json.loads(out.output)


def _ids(result: dict[str, Any]) -> set[str]:
    return {m["id"] for m in result["matches"]}


def _noisy_healthy(n: int = 100, dips: tuple[int, ...] = (9, 29, 49, 69, 89)) -> list[float]:
    rng = random.Random(11)
    values = [0.5 + rng.uniform(-0.08, 0.08) for _ in range(n)]
    for i in dips:
        values[i] = 0.03
    return values


def test_the_issues_example_median_half_with_five_percent_dips_is_not_entropy_collapse(
    runner: Any, tmp_path: Path
) -> None:
    values = _noisy_healthy()
    assert sorted(values)[50] > 0.4 and sum(v < 0.05 for v in values) == 5
    result = _match(runner, tmp_path, _step_log(values))
    assert "entropy-collapse" not in _ids(result)
    assert "actor/entropy" in result["signals"]["metrics"]


def test_a_dip_that_recovered_is_not_a_sustained_state(runner: Any, tmp_path: Path) -> None:
    values = _noisy_healthy(dips=tuple(range(40, 47)))  # 7 steps in a row below 0.05, then healthy again
    assert "entropy-collapse" not in _ids(_match(runner, tmp_path, _step_log(values)))


def test_a_collapse_that_stays_down_is_named_first_with_the_window_as_evidence(runner: Any, tmp_path: Path) -> None:
    rng = random.Random(5)
    values = [0.5 + rng.uniform(-0.05, 0.05) for _ in range(40)] + [0.02 + rng.uniform(0, 0.01) for _ in range(10)]
    values[-3] = 0.06  # one noisy step inside the collapsed tail does not save the run
    result = _match(runner, tmp_path, _step_log(values))
    # Whether it is a `match` or a `possible` is the fitted calibration's call; that it is the answer is not.
    match = result["matches"][0]
    assert match["id"] == "entropy-collapse" and match["verdict"] in ("match", "possible")
    metric = next(e for e in match["evidence"] if e["kind"] == "metric")
    assert metric["steps"] == [41, 50]  # from where the collapsed state began to the last step
    assert "of the last 5 steps, since step 41" in metric["text"] and "median" in metric["text"]


def _points(values: list[float]) -> dict[str, list[MetricPoint]]:
    return {"m": [MetricPoint(step=i + 1, value=v, line_no=i + 1) for i, v in enumerate(values)]}


def test_level_semantics_window_share_and_share_of_all_steps() -> None:
    sig = MetricSignature(metric="m", above=1.0, min_steps=3)
    assert evaluate_metric(sig, _points([0.1] * 20 + [2.0] * 5)) is not None  # the trailing window
    assert evaluate_metric(sig, _points([0.1] * 20 + [2.0] * 3)) is None  # 3 of the last 5: not sustained
    assert evaluate_metric(sig, _points([2.0, 2.0, 2.0])) is not None  # a short paste: every step it has
    assert evaluate_metric(sig, _points([2.0, 0.1] * 10)) is not None  # half of all steps, wherever they are
    assert evaluate_metric(sig, _points([2.0] * 6 + [0.1] * 30)) is None  # a spell at the start, then healthy
    assert evaluate_metric(sig, _points([float("nan")] * 10)) is None
    wide = MetricSignature(metric="m", above=1.0, min_steps=3, window=10, share=0.5)
    assert evaluate_metric(wide, _points([0.1] * 20 + [2.0, 0.1] * 5)) is not None
    with pytest.raises(ValueError, match="'window' and 'share' belong to an 'above' or 'below'"):
        MetricSignature(metric="m", trend="rising", window=10)


@pytest.mark.parametrize(
    "fixture",
    sorted(p for p in FIXTURES.glob("*/negative-*") if p.suffix in (".log", ".jsonl") and "step:" in p.read_text()),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_healthy_step_logs_fire_no_level_signature(fixture: Path) -> None:
    """Every healthy step log among the entry fixtures, against every level signature of the corpus."""
    from kb.corpus import load_corpus
    from kb.loglines import split_lines
    from kb.signals import extract_signals
    from tests.conftest import CORPUS

    signals = extract_signals(split_lines(fixture.read_text()))
    fired = [
        (entry.id, ev.text)
        for entry in load_corpus(CORPUS).entries
        for sig in entry.meta.metrics
        if (sig.above is not None or sig.below is not None)
        and (ev := evaluate_metric(sig, signals.metrics)) is not None
    ]
    assert fired == []
