"""Fitting the confidence (`verl-doctor eval tests/eval/real --split dev --fit`): several calibrators of
the hand-set fusion, each measured by cross-validation grouped by thread on the real benchmark's dev
split, the best one that reaches the target precision refitted on all of dev and written to
`kb/data/calibration.json` (read by :mod:`kb.calibration`).

Every figure this module reports is out of fold: the map and both thresholds that score a case were fitted
without its thread (nested: a fold's thresholds come from cross-validation inside its training part). A
fit on the cases it scores would promise a precision the next input does not get.

Needs scikit-learn and numpy (the dev extra); the engine never imports this module.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kb import calibration as C
from kb.benchmark import RealCase, reliability
from kb.scoring import MATCH_THRESHOLD

if TYPE_CHECKING:
    from kb.engine import Diagnoser
    from kb.result import Result

#: Folds of the cross-validation (outer and inner). Five keeps ~120 dev cases in each test fold.
FOLDS = 5
#: A group (questions, logs) with fewer candidates than this, or with one class only, takes the pooled map.
MIN_GROUP = 40
#: `possible` keeps this share of the right candidates (out of fold): nearly every one, since a right first
#: answer below it is lost (at 0.95, eight of the 257 right first answers on dev were).
POSSIBLE_KEEPS = 0.99
#: The logistic over a few features beside the fused score: the evidence the fusion weighs least well.
FEW: tuple[str, ...] = ("heuristic_logit", "first", "question", "verl_evidence", "has_rule", "held_back")


class FitError(Exception):
    """No calibrator reached the target precision on dev: nothing is written, the shipped file stands."""


@dataclass(frozen=True)
class Spec:
    """One calibrator to try: its kind, whether questions and logs get their own map, and (logistic) on what."""

    kind: C.Kind
    grouping: str = "all"
    names: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        what = {"isotonic": "isotonic(score)", "platt": "Platt(logit score)"}.get(self.kind, "")
        if self.kind == "logistic":
            what = "logistic(all features)" if self.names == C.FEATURES else "logistic(score + few)"
        return what + {"all": "", "kind": " per kind", "rank": " first/others"}[self.grouping]


SPECS: tuple[Spec, ...] = (
    Spec("isotonic"),
    Spec("isotonic", "kind"),
    Spec("isotonic", "rank"),
    Spec("platt"),
    Spec("platt", "kind"),
    Spec("platt", "rank"),
    Spec("logistic", "all", C.FEATURES),
    Spec("logistic", "all", FEW),
    Spec("logistic", "kind", FEW),
)


@dataclass
class FitCase:
    """A dev case as the hand-set fusion answered it: every candidate it keeps, in its order."""

    thread: str
    negative: bool
    candidates: list[tuple[dict[str, float], bool]]  # features, is an expected entry
    result: Result | None = None  # what the engine returned (to score the fitted calibration without rerunning)


@dataclass
class Figures:
    """Out-of-fold figures of one calibrator (or of the hand-set fusion) on the dev cases."""

    label: str
    ece: float
    match_precision: float  # of every first answer that is a `match`, negatives included
    matches: int  # first answers that are a `match` (positives and negatives)
    positives_matched: int
    positives: int
    top1: int
    negatives_claimed: int  # negatives with any `match` among the five answers
    negatives: int
    eligible: bool = False
    notes: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {
            "calibrator": self.label,
            "ece": round(self.ece, 4),
            "match_precision": round(self.match_precision, 4),
            "matches": self.matches,
            "positives_matched": self.positives_matched,
            "positives": self.positives,
            "top1": self.top1,
            "negatives_claimed": self.negatives_claimed,
            "negatives": self.negatives,
            "eligible": self.eligible,
        }


def collect(diagnoser: Diagnoser, cases: Sequence[RealCase]) -> list[FitCase]:
    """Run the hand-set fusion (no calibration) on every case, keeping each candidate's features."""
    plain = copy.copy(diagnoser)
    plain.calibration = None
    out = []
    for case in cases:
        result = plain.diagnose(case.input, top=50)
        cands = [(m.features, m.id in case.answers) for m in result.matches]
        out.append(FitCase(case.thread, case.negative, cands, result))
    return out


def splits(cases: Sequence[FitCase], k: int = FOLDS, salt: str = "") -> list[tuple[list[int], list[int]]]:
    """The cross-validation's (train, test) case indices: threads in the order of their salted sha256,
    dealt round ``k`` folds, so a thread's cases are all on one side, the folds are even, and the same
    threads always give the same folds."""
    threads = sorted({c.thread for c in cases}, key=lambda t: hashlib.sha256(f"{salt}{t}".encode()).hexdigest())
    fold_of = {t: i % k for i, t in enumerate(threads)}
    return [
        (
            [i for i, c in enumerate(cases) if fold_of[c.thread] != f],
            [i for i, c in enumerate(cases) if fold_of[c.thread] == f],
        )
        for f in range(k)
    ]


# --------------------------------------------------------------------------- fitting one calibrator


def _fit_group(spec: Spec, rows: list[tuple[dict[str, float], bool]]) -> C.GroupMap:
    import numpy as np
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    y = np.array([int(ok) for _, ok in rows])
    if spec.kind == "isotonic":
        x = np.array([f["score"] for f, _ in rows])
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(x, y)
        return C.GroupMap(
            x=tuple(round(float(v), 6) for v in iso.X_thresholds_),
            y=tuple(round(float(v), 6) for v in iso.y_thresholds_),
        )
    if spec.kind == "platt":
        x = np.array([[C.logit(f["score"])] for f, _ in rows])
        model = LogisticRegression(C=1e4, max_iter=2000).fit(x, y)
        return C.GroupMap(a=round(float(model.coef_[0][0]), 6), b=round(float(model.intercept_[0]), 6))
    x = np.array([[f[n] for n in spec.names] for f, _ in rows])
    model = LogisticRegression(C=1.0, max_iter=2000).fit(x, y)
    return C.GroupMap(
        names=spec.names,
        weights=tuple(round(float(w), 6) for w in model.coef_[0]),
        bias=round(float(model.intercept_[0]), 6),
    )


def _usable(rows: list[tuple[dict[str, float], bool]]) -> bool:
    return len(rows) >= MIN_GROUP and len({ok for _, ok in rows}) == 2


def fit_map(spec: Spec, cases: Sequence[FitCase], note: str = "") -> C.Calibration:
    """The calibrator fitted on every candidate of ``cases``, thresholds not yet set (no `match`)."""
    rows = [cand for case in cases for cand in case.candidates]
    if not _usable(rows):
        raise FitError(f"{len(rows)} candidates, of one class or too few to fit on")
    groups: dict[str, C.GroupMap] = {}
    names = C.group_names(spec.grouping)
    pooled: C.GroupMap | None = None
    for name in names:
        inside = [r for r in rows if C.group_of(r[0], spec.grouping) == name]
        if _usable(inside):
            groups[name] = _fit_group(spec, inside)
        else:
            # Too few of this kind to fit alone: it shares the pooled map.
            pooled = pooled or _fit_group(spec, rows)
            groups[name] = pooled
    return C.Calibration(spec.kind, spec.grouping, groups, None, 0.0, note)


def _answers(cal: C.Calibration | None, case: FitCase) -> list[tuple[float, bool, bool]]:
    """The case's answers as :meth:`kb.engine.Diagnoser.calibrate` gives them: (confidence, is right, is a
    `match`) in the fused order, none above the one before, the `possible` floor applied. ``cal`` None:
    the hand-set fusion and its 0.70."""
    out = []
    ceiling = 1.0
    for f, ok in case.candidates:
        held = bool(f["held_back"])
        if cal is None:
            out.append((f["score"], ok, f["score"] >= MATCH_THRESHOLD and not held))
            continue
        p = ceiling = min(ceiling, cal.probability(f))
        if p >= cal.possible_threshold:
            out.append((p, ok, cal.is_match(p) and not held))
    return out


def _oof(spec: Spec, cases: Sequence[FitCase], salt: str) -> list[list[tuple[float, bool]]]:
    """Each case's candidates' probabilities from a map fitted on the other folds (no thresholds)."""
    out: list[list[tuple[float, bool]]] = [[] for _ in cases]
    for train, test in splits(cases, salt=salt):
        cal = fit_map(spec, [cases[i] for i in train])
        for i in test:
            out[i] = [(p, ok) for p, ok, _ in _answers(cal, cases[i])]  # no floor nor match yet: both 0 / None
    return out


def thresholds(scored: list[list[tuple[float, bool]]]) -> tuple[float | None, float]:
    """`match` and `possible` from out-of-fold probabilities (each case's candidates, best first).

    `match`: the lowest probability above which the first answers were right at least TARGET_PRECISION of
    the time, over at least MIN_REGION of them (ties are taken whole: a threshold cannot split them); None
    when no such region exists. `possible`: keeps POSSIBLE_KEEPS of the right candidates, never above `match`.
    """
    firsts = sorted((c[0] for c in scored if c), key=lambda pr: -pr[0])
    match: float | None = None
    hits = 0
    for i, (p, ok) in enumerate(firsts):
        hits += ok
        n = i + 1
        if n < len(firsts) and firsts[n][0] == p:
            continue  # the next answer has the same probability: the region must hold both
        if n >= C.MIN_REGION and hits / n >= C.TARGET_PRECISION:
            match = p
    right = sorted(p for c in scored for p, ok in c if ok)
    possible = right[int((1 - POSSIBLE_KEEPS) * len(right))] if right else 0.0
    if match is not None:
        possible = min(possible, match)
    return match, possible


def region(scored: list[list[tuple[float, bool]]], match: float | None) -> tuple[int, int]:
    """(first answers at or above ``match``, how many of them were right): the `match` region's record."""
    firsts = [c[0] for c in scored if c and match is not None and c[0][0] >= match]
    return len(firsts), sum(ok for _, ok in firsts)


def _fit_scored(
    spec: Spec, cases: Sequence[FitCase], note: str, salt: str
) -> tuple[C.Calibration, list[list[tuple[float, bool]]]]:
    """:func:`fit_spec`, with the out-of-fold probabilities its thresholds were chosen on."""
    cal = fit_map(spec, cases, note)
    scored = _oof(spec, cases, salt)
    match, possible = thresholds(scored)
    return C.Calibration(cal.kind, cal.grouping, cal.groups, match, possible, note), scored


def fit_spec(spec: Spec, cases: Sequence[FitCase], note: str = "", salt: str = "") -> C.Calibration:
    """The calibrator fitted on all ``cases``, its thresholds from cross-validation over them."""
    return _fit_scored(spec, cases, note, salt)[0]


# --------------------------------------------------------------------------- measuring


def measure(label: str, cases: Sequence[FitCase], predicted: list[list[tuple[float, bool, bool]]]) -> Figures:
    firsts = [(a[0][0], a[0][1]) for a in predicted if a]
    _, ece = reliability(firsts)
    matched = [a[0] for a in predicted if a and a[0][2]]
    pos = [a for c, a in zip(cases, predicted, strict=True) if not c.negative]
    neg = [a for c, a in zip(cases, predicted, strict=True) if c.negative]
    return Figures(
        label=label,
        ece=ece,
        match_precision=sum(ok for _, ok, _ in matched) / len(matched) if matched else 0.0,
        matches=len(matched),
        positives_matched=sum(1 for a in pos if a and a[0][2]),
        positives=len(pos),
        top1=sum(1 for a in pos if a and a[0][1]),
        negatives_claimed=sum(1 for a in neg if any(m for _, _, m in a[:5])),
        negatives=len(neg),
    )


def cross_validate(spec: Spec, cases: Sequence[FitCase]) -> Figures:
    """Nested, grouped by thread: each outer fold is scored by a map fitted on the others, with thresholds
    from an inner cross-validation of those others (never from the fold itself)."""
    predicted: list[list[tuple[float, bool, bool]]] = [[] for _ in cases]
    for k, (train, test) in enumerate(splits(cases)):
        # Another salt: the inner folds are not the outer ones minus a fold.
        cal = fit_spec(spec, [cases[i] for i in train], salt=f"inner{k}:")
        for i in test:
            predicted[i] = _answers(cal, cases[i])
    return measure(spec.label, cases, predicted)


def hand_set(cases: Sequence[FitCase]) -> Figures:
    """The fusion as it is, 0.70 for `match`: nothing fitted, so nothing to hold out."""
    return measure("hand-set fusion (match from 0.70)", cases, [_answers(None, c) for c in cases])


def choose(table: list[Figures], baseline: Figures) -> Figures:
    """Mark the eligible rows and return the chosen one.

    Eligible: a `match` region of at least TARGET_PRECISION out of fold (over MIN_REGION answers or more) and a
    top-1 no lower than the hand-set fusion's; of those, the lowest ECE, and among ECEs within 0.01 of it, the
    most `match` answers. When none is eligible (unseen text is hard to be sure of, and a few hundred cases
    leave a nested fold's region a handful of answers), the lowest ECE of those that lose no first answer: its
    `match` region then comes from the out-of-fold probabilities of all the cases (:func:`fit_spec`), or it
    has none, and the table says how its region fared out of fold."""
    for row in table:
        row.eligible = (
            row.matches >= C.MIN_REGION and row.match_precision >= C.TARGET_PRECISION and row.top1 >= baseline.top1
        )
        if row.matches < C.MIN_REGION:
            row.notes.append("no match region")
        elif row.match_precision < C.TARGET_PRECISION:
            row.notes.append(f"match precision below {C.TARGET_PRECISION:.0%}")
        if row.top1 < baseline.top1:
            row.notes.append("its floor loses right first answers")
    eligible = [r for r in table if r.eligible]
    if not eligible:
        eligible = [r for r in table if r.positives and r.top1 >= baseline.top1]  # a failed fit scored nothing
        if not eligible:
            raise FitError("every calibrator's floor loses right first answers")
        return min(eligible, key=lambda r: r.ece)
    best_ece = min(r.ece for r in eligible)
    near = [r for r in eligible if r.ece <= best_ece + 0.01]
    return max(near, key=lambda r: (r.positives_matched, -r.ece))


@dataclass
class FitReport:
    calibration: C.Calibration
    table: list[Figures]
    baseline: Figures
    chosen: Figures


def fit(cases: Sequence[FitCase], note: str, specs: Sequence[Spec] | None = None) -> FitReport:
    """Cross-validate every calibrator of ``specs`` (default :data:`SPECS`), choose one (:func:`choose`),
    refit it on all ``cases``. Raises FitError when none is eligible (the table is in the message)."""
    specs = SPECS if specs is None else specs
    baseline = hand_set(cases)
    table = []
    for spec in specs:
        try:
            table.append(cross_validate(spec, cases))
        except FitError as exc:
            table.append(Figures(spec.label, 1.0, 0.0, 0, 0, 0, 0, 0, 0, notes=[str(exc)]))
    try:
        chosen = choose(table, baseline)
    except FitError as exc:
        raise FitError(f"{exc}:\n{render_table(table, baseline)}") from None
    spec = specs[table.index(chosen)]
    cal, scored = _fit_scored(spec, cases, note, "")
    if cal.match_threshold is None:
        # A calibration without a region would make every surface say `possible` at most: that needs a person's
        # decision, not a refit's. (With a region that missed the target only in the nested folds, it ships.)
        raise FitError(
            f"{chosen.label}: no 'match' region of {C.TARGET_PRECISION:.0%} precision on the cases:\n"
            f"{render_table(table, baseline)}"
        )
    cal = C.Calibration(
        cal.kind,
        cal.grouping,
        cal.groups,
        cal.match_threshold,
        cal.possible_threshold,
        note,
        {
            "folds": FOLDS,
            "grouped_by": "thread",
            "chosen": chosen.row(),
            # The region's record on the out-of-fold probabilities of every case it was fitted on (the
            # threshold was chosen on them: the nested figures of "chosen" are the estimate for new text).
            "match_region": dict(zip(("answers", "right"), region(scored, cal.match_threshold), strict=True)),
            "hand_set": baseline.row(),
            "candidates": [r.row() for r in table],
        },
    )
    return FitReport(cal, table, baseline, chosen)


def recalibrated(diagnoser: Diagnoser, case: FitCase, top: int = 5) -> Result:
    """The case's hand-set result as ``diagnoser`` (with its calibration) would have returned it."""
    assert case.result is not None
    result = copy.deepcopy(case.result)
    for m in result.matches:
        m.confidence, m.verdict = m.features["score"], "match" if m.features["score"] >= MATCH_THRESHOLD else "possible"
    held = {m.id for m in result.matches if m.features["held_back"]}
    result.matches = diagnoser.calibrate(result.matches, held)[:top]
    result.abstained = not any(m.verdict == "match" for m in result.matches)
    return result


def render_table(table: list[Figures], baseline: Figures) -> str:
    lines = [
        f"{'calibrator (dev, 5-fold CV grouped by thread)':<46} {'ECE':>6} {'match prec':>10} {'matches':>7} "
        f"{'pos match':>9} {'top-1':>7} {'neg claimed':>11}"
    ]
    for r in [baseline, *table]:
        mark = "*" if r.eligible else " "
        lines.append(
            f"{mark}{r.label:<45} {r.ece:6.3f} {r.match_precision:10.1%} {r.matches:7d} "
            f"{r.positives_matched:4d}/{r.positives:<4d} {r.top1:3d}/{r.positives:<3d} "
            f"{r.negatives_claimed:4d}/{r.negatives:<4d}" + (f"  ({'; '.join(r.notes)})" if r.notes else "")
        )
    return "\n".join(lines)
