"""The fitted confidence: the shipped file, the fit's cross-validation, and the engine applying it."""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from pathlib import Path

import pytest

from kb import calibration as C
from kb import calibration_fit as F
from kb.benchmark import load_split
from tests.conftest import REPO

REAL = REPO / "tests" / "eval" / "real"


def _features(score: float, first: bool = True, question: bool = False, held: bool = False) -> dict[str, float]:
    f = C.features(score, 0.8, 0.5, 0.3, question, 0, 0, False, True)
    C.finish(f, score, held, first)
    return f


def _cases(n_threads: int, seed: int, informative: bool = True) -> list[F.FitCase]:
    """Synthetic dev cases: two per thread, three candidates each. Informative: the first candidate is right
    when its score is above 0.75 (one in fifty of them wrong), else never; uninformative: a coin flip."""
    rng = random.Random(seed)
    out = []
    for t in range(n_threads):
        for _ in range(2):
            scores = sorted((round(rng.uniform(0.4, 0.99), 3) for _ in range(3)), reverse=True)
            right = (scores[0] > 0.75 and rng.random() > 0.02) if informative else rng.random() < 0.5
            cands = [
                (_features(score, first=rank == 0, question=t % 2 == 0), rank == 0 and right)
                for rank, score in enumerate(scores)
            ]
            out.append(F.FitCase(thread=f"o/r#{t}", negative=False, candidates=cands))
    return out


#: One calibrator of each kind (the whole list makes the fit tests slow, not stronger).
SOME = (F.Spec("isotonic", "rank"), F.Spec("platt"), F.Spec("logistic", "all", F.FEW))


def _every_kind() -> list[C.Calibration]:
    cases = _cases(60, 1)
    return [dataclasses.replace(F.fit_map(spec, cases, "test"), match_threshold=0.8) for spec in F.SPECS]


def test_every_kind_of_calibration_round_trips_through_its_json() -> None:
    for cal in _every_kind():
        again = C.Calibration.from_json(json.loads(json.dumps(cal.to_json())))
        assert again == cal
        f = _features(0.77)
        assert again.probability(f) == cal.probability(f)
    bad = _every_kind()[0].to_json()
    with pytest.raises(ValueError, match="format"):
        C.Calibration.from_json({**bad, "format": 1})
    with pytest.raises(ValueError, match="sorted"):
        C.Calibration.from_json({**bad, "groups": {"all": {"x": [0.9, 0.5], "y": [0.1, 0.2]}}})
    with pytest.raises(ValueError, match="features the engine does not make"):
        C.Calibration.from_json(
            {**bad, "kind": "logistic", "groups": {"all": {"features": ["nope"], "weights": [1.0], "bias": 0.0}}}
        )


def test_the_runtime_gives_the_probabilities_scikit_learn_fitted() -> None:
    import numpy as np
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    rows = [cand for case in _cases(150, 2) for cand in case.candidates]
    y = np.array([int(ok) for _, ok in rows])
    grid = [_features(s / 200, first=s % 3 == 0, question=s % 2 == 0) for s in range(40, 200)]

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit([f["score"] for f, _ in rows], y)
    cal = F.fit_map(F.Spec("isotonic"), [F.FitCase("o/r#0", False, rows)])
    for f, want in zip(grid, iso.predict([f["score"] for f in grid]), strict=True):
        assert cal.probability(f) == pytest.approx(min(want, C.PROBABILITY_CAP), abs=6e-4)

    names = F.FEW
    lr = LogisticRegression(C=1.0, max_iter=2000).fit([[f[n] for n in names] for f, _ in rows], y)
    cal = F.fit_map(F.Spec("logistic", "all", names), [F.FitCase("o/r#0", False, rows)])
    for f, want in zip(grid, lr.predict_proba([[f[n] for n in names] for f in grid])[:, 1], strict=True):
        assert cal.probability(f) == pytest.approx(min(want, C.PROBABILITY_CAP), abs=6e-4)


def test_cross_validation_never_puts_one_thread_on_both_sides() -> None:
    cases = _cases(57, 3)
    for salt in ("", "inner0:"):
        folds = F.splits(cases, salt=salt)
        assert len(folds) == F.FOLDS
        tested = sorted(i for _, test in folds for i in test)
        assert tested == list(range(len(cases)))  # every case is scored exactly once
        for train, test in folds:
            assert {cases[i].thread for i in train}.isdisjoint({cases[i].thread for i in test})
            assert set(train) | set(test) == set(range(len(cases)))
        sizes = [len(test) for _, test in folds]
        assert max(sizes) - min(sizes) <= 2  # threads of two cases, dealt round: even folds
    assert F.splits(cases) == F.splits(list(cases))
    assert F.splits(cases) != F.splits(cases, salt="inner0:")


def test_the_maps_that_score_a_fold_never_saw_its_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = _cases(60, 4)
    seen: list[set[str]] = []
    real_fit_map = F.fit_map

    def recording(spec: F.Spec, train: list[F.FitCase], note: str = "") -> C.Calibration:
        seen.append({c.thread for c in train})
        return real_fit_map(spec, train, note)

    monkeypatch.setattr(F, "fit_map", recording)
    F.cross_validate(F.Spec("isotonic"), cases)
    # Per outer fold: its map, then the inner folds' five maps; none of them saw the outer test fold.
    for k, (_, test) in enumerate(F.splits(cases)):
        held_out = {cases[i].thread for i in test}
        for threads in seen[k * (1 + F.FOLDS) : (k + 1) * (1 + F.FOLDS)]:
            assert threads.isdisjoint(held_out)
    assert len(seen) == F.FOLDS * (1 + F.FOLDS)


def test_a_fit_that_cannot_reach_the_precision_target_ships_no_match_region() -> None:
    noise = _cases(120, 5, informative=False)
    for spec in F.SPECS[:2]:
        cal = F.fit_spec(spec, noise)
        assert cal.match_threshold is None
        assert not any(cal.is_match(p / 100) for p in range(101))
    # No calibrator is eligible, and the best of them has no region on the cases either: nothing ships.
    with pytest.raises(F.FitError, match="no 'match' region of 97%"):
        F.fit(noise, "noise", SOME)


def test_with_no_eligible_calibrator_the_lowest_ece_that_keeps_top1_is_chosen() -> None:
    def row(label: str, ece: float, precision: float, top1: int) -> F.Figures:
        return F.Figures(label, ece, precision, 12, 12, 200, top1, 0, 200)

    baseline = row("hand-set", 0.4, 0.88, 68)
    table = [row("a", 0.05, 0.90, 68), row("b", 0.03, 0.92, 67), row("c", 0.04, 0.93, 68)]
    chosen = F.choose(table, baseline)
    assert chosen.label == "c" and not chosen.eligible  # b has a lower ECE but its floor loses a first answer
    table.append(row("d", 0.06, 0.98, 68))
    assert F.choose(table, baseline).label == "d"  # an eligible one always wins


def test_a_fit_where_the_target_is_reachable_is_deterministic_and_keeps_it() -> None:
    cases = _cases(150, 6)
    first = F.fit(cases, "test", SOME)
    again = F.fit(copy.deepcopy(cases), "test", SOME)
    assert json.dumps(first.calibration.to_json()) == json.dumps(again.calibration.to_json())
    assert first.chosen.eligible and first.chosen.match_precision >= C.TARGET_PRECISION
    assert first.calibration.match_threshold is not None
    assert first.calibration.possible_threshold <= first.calibration.match_threshold


def test_thresholds_take_ties_whole() -> None:
    # Twenty first answers at 0.9, one wrong: 95 %. A threshold cannot split the tie to reach 97 %.
    tied = [[(0.9, i != 0)] for i in range(20)]
    assert F.thresholds(tied)[0] is None
    # Forty more right ones above it: the region from 0.95 holds 40/40; from 0.9, 59/60 (98.3 %).
    above = [[(0.95, True)] for _ in range(40)]
    assert F.thresholds(above + tied)[0] == 0.9
    assert F.thresholds(above + tied + [[(0.5, False)] for _ in range(3)])[0] == 0.9


def test_the_shipped_calibration_is_one_the_fit_chose_by_cross_validation() -> None:
    data = json.loads(C.bundled_path().read_text(encoding="utf-8"))
    cal = C.Calibration.from_json(data)
    assert cal.match_threshold is not None and 0.0 < cal.possible_threshold < cal.match_threshold < 1.0
    chosen = data["cv"]["chosen"]
    # Eligible (its region held the target out of fold), or the best of none eligible; either way the region
    # it ships held the target on the out-of-fold probabilities it was chosen on.
    assert chosen["eligible"] or not any(row["eligible"] for row in data["cv"]["candidates"])
    region = data["cv"]["match_region"]
    assert region["answers"] >= C.MIN_REGION and region["right"] / region["answers"] >= C.TARGET_PRECISION
    assert chosen["top1"] >= data["cv"]["hand_set"]["top1"]
    assert data["cv"]["grouped_by"] == "thread"


def _clone(diagnoser, cal: C.Calibration | None):  # type: ignore[no-untyped-def]
    clone = copy.copy(diagnoser.without_retriever())
    clone.calibration = cal
    return clone


HYDRA = (
    "Could not override 'actor_rollout_ref.rollout.gpu_memory_utilisation'.\n"
    "Key 'gpu_memory_utilisation' is not in struct\n"
    "    full_key: actor_rollout_ref.rollout.gpu_memory_utilisation\n"
)


def test_the_engine_shows_the_calibrated_probability_and_uses_the_files_thresholds(diagnoser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plain = _clone(diagnoser, None).diagnose(HYDRA)
    assert plain.matches, "the test input must give a candidate"
    top = plain.matches[0]
    # A map that halves every fused score, written to a file and read back as the engine reads it.
    cal = C.Calibration("isotonic", "all", {"all": C.GroupMap(x=(0.0, 1.0), y=(0.0, 0.5))}, 0.3, 0.1, "test")
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(cal.to_json()), encoding="utf-8")
    loaded = C.load(path)
    assert loaded == cal
    got = _clone(diagnoser, loaded).diagnose(HYDRA).matches[0]
    assert got.id == top.id and got.confidence == pytest.approx(round(top.confidence / 2, 3), abs=1e-3)
    assert got.score == top.confidence
    assert got.verdict == ("match" if got.confidence >= 0.3 else "possible")
    # The same map with no match region: nothing is a match; a floor above every candidate: nothing shown.
    none = C.Calibration("isotonic", "all", cal.groups, None, 0.1, "test")
    assert all(m.verdict == "possible" for m in _clone(diagnoser, none).diagnose(HYDRA).matches)
    high = C.Calibration("isotonic", "all", cal.groups, 0.6, 0.55, "test")
    result = _clone(diagnoser, high).diagnose(HYDRA)
    assert result.matches == [] and result.abstained


def test_a_held_back_candidate_stays_a_near_miss_whatever_the_map_says(diagnoser) -> None:  # type: ignore[no-untyped-def]
    from kb.result import Match

    sure = C.Calibration("isotonic", "all", {"all": C.GroupMap(x=(0.0, 1.0), y=(0.99, 0.99))}, 0.5, 0.0, "test")
    engine = _clone(diagnoser, sure)
    plain = _clone(diagnoser, None).diagnose(HYDRA).matches
    matches = [Match.model_validate(m.model_dump()) for m in plain]
    for m, p in zip(matches, plain, strict=True):
        m.features = dict(p.features)
    out = engine.calibrate(matches, {matches[0].id})
    assert {m.id: m.verdict for m in out}[matches[0].id] == "possible"
    assert all(m.verdict == "match" for m in out if m.id != matches[0].id)


def test_a_missing_or_broken_file_leaves_the_hand_set_fusion(tmp_path: Path) -> None:
    assert C.load(tmp_path / "absent.json") is None
    (tmp_path / "bad.json").write_text('{"format": 2, "kind": "isotonic"}', encoding="utf-8")
    assert C.load(tmp_path / "bad.json") is None


def test_the_fit_on_real_dev_cases_answers_as_the_engine_then_does(diagnoser) -> None:  # type: ignore[no-untyped-def]
    # Every fifth case keeps the test short; the shipped fit uses the whole split. (Every seventh of the
    # 690-case split left an inner fold with one class of candidates, which the fit rightly refuses.)
    sample = load_split(REAL, "dev")[::5]
    plain = _clone(diagnoser, None)
    collected = F.collect(plain, sample)
    cal = F.fit_spec(F.Spec("logistic", "all", F.FEW), collected, "test sample")
    engine = _clone(diagnoser, cal)
    for case, fc in zip(sample, collected, strict=True):
        fresh = engine.diagnose(case.input, top=5)
        again = F.recalibrated(engine, fc)
        assert [(m.id, m.confidence, m.verdict) for m in fresh.matches] == [
            (m.id, m.confidence, m.verdict) for m in again.matches
        ]
        assert fresh.abstained == again.abstained


def test_fit_refuses_the_holdout_and_the_rules_only_engine(runner) -> None:  # type: ignore[no-untyped-def]
    from kb.cli import main

    result = runner.invoke(main, ["eval", str(REAL), "--split", "holdout", "--fit"])
    assert result.exit_code == 2 and "never fitted on" in result.output
    result = runner.invoke(main, ["eval", str(REAL), "--split", "dev", "--fit", "--no-semantic"])
    assert result.exit_code == 2 and "drop --no-semantic" in result.output


def test_a_refit_that_misses_the_target_exits_1_and_leaves_the_shipped_file(runner, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from kb.cli import main

    shipped = C.bundled_path().read_bytes()
    # What a changed corpus could give: candidates whose scores say nothing about being right.
    def noise(diagnoser, cases):  # type: ignore[no-untyped-def]
        # _cases gives two a thread; the fit zips one FitCase to each dev case.
        return _cases((len(cases) + 1) // 2, 7, informative=False)[: len(cases)]

    monkeypatch.setattr(F, "collect", noise)
    monkeypatch.setattr(F, "SPECS", SOME)
    result = runner.invoke(main, ["eval", str(REAL), "--split", "dev", "--fit"])
    assert result.exit_code == 1, result.output
    assert "no 'match' region of 97%" in result.output and "nothing written" in result.output
    assert C.bundled_path().read_bytes() == shipped
