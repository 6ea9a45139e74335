"""The real benchmark (`tests/eval/real/`): cases copied verbatim from verl's issue tracker and from other
projects' trackers, split into `dev` and a frozen `holdout` by thread, scored with Wilson intervals.

A figure on text we wrote ourselves tells a user nothing; this module is how every change is judged on
text nobody tuned on. The split and its manifest are made by `tests/eval/real/split.py`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from kb.result import Result

Kind = Literal["traceback", "log", "question", "metrics"]
Split = Literal["dev", "holdout"]
SPLITS: tuple[Split, ...] = ("dev", "holdout")
MANIFEST = "manifest.json"
NO_ENTRY = "none"
# 1.96: the two-sided 95 % normal quantile the Wilson interval is built on.
_Z95 = 1.959963984540054


class RealCase(BaseModel):
    """One case: verbatim input from a thread, with the ground truth that thread gives."""

    id: str
    source: str = Field(description="URL of the thread the input comes from")
    thread: str = Field(description="owner/repo#N: cases of one thread are never on both sides of the split")
    project: str
    kind: Kind
    area: str
    input: str = Field(min_length=1)
    expected: list[str] = Field(description="entry ids that answer it; ['none'] while no entry does; [] for a negative")
    negative: bool
    root_cause: str
    fix: str
    fix_keys: list[str] = Field(default_factory=list)
    confidence: Literal["high", "medium"]
    verl_version: str | None = None
    ground_truth: str = ""

    @field_validator("expected")
    @classmethod
    def _none_alone(cls, v: list[str]) -> list[str]:
        if NO_ENTRY in v and len(v) > 1:
            raise ValueError("'none' cannot stand beside entry ids")
        return v

    @property
    def no_entry(self) -> bool:
        """A real verl problem that no corpus entry answers yet (a coverage gap, not a negative)."""
        return self.expected == [NO_ENTRY]

    @property
    def answers(self) -> list[str]:
        return [] if self.no_entry else self.expected


def case_id(thread: str, text: str) -> str:
    """A stable id from the case's content, so the manifest names cases without depending on file order."""
    return "r" + hashlib.sha256(f"{thread}\n{text}".encode()).hexdigest()[:10]


def thread_of(url: str) -> str:
    """owner/repo#N from a GitHub issue or pull URL (volcengine/verl is verl-project/verl renamed)."""
    parts = url.rstrip("/").split("/")
    i = parts.index("github.com")
    owner, repo, number = parts[i + 1], parts[i + 2], parts[i + 4]
    if (owner.lower(), repo.lower()) == ("volcengine", "verl"):
        owner = "verl-project"
    return f"{owner}/{repo}#{number.split('#')[0]}"


def cited_threads(entries: Iterable[object]) -> set[str]:
    """Threads (lower-cased owner/repo#N) an entry cites: the entry was written from them, so their cases
    are dev cases, never holdout, and they are not unseen text to the corpus."""
    out = set()
    for entry in entries:
        meta = getattr(entry, "meta", entry)  # a loaded Entry keeps its front matter in .meta
        for url in getattr(meta, "sources", ()):
            if "github.com/" in url and ("/issues/" in url or "/pull/" in url):
                out.add(thread_of(url).lower())
    return out


def unseen(cases: Iterable[RealCase], entries: Iterable[object]) -> list[RealCase]:
    """The cases whose thread no entry cites: text the corpus was not written from, like a user's next paste
    (and like the holdout, which no entry may cite)."""
    cited = cited_threads(entries)
    return [c for c in cases if c.thread.lower() not in cited]


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_split(directory: Path, split: Split) -> list[RealCase]:
    """The cases of one split. Raises ValueError naming file:line for a bad case."""
    path = directory / f"{split}.jsonl"
    if not path.is_file():
        raise ValueError(f"{path}: no such file (is {directory} a real benchmark directory?)")
    cases: list[RealCase] = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            cases.append(RealCase.model_validate(json.loads(raw)))
        except (ValueError, ValidationError) as exc:
            raise ValueError(f"{path}:{n}: bad case: {exc}") from None
    if not cases:
        raise ValueError(f"{path}: no cases")
    return cases


def is_benchmark_dir(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


class Rate(BaseModel):
    """k of n, with its Wilson 95 % score interval (sound for small n and for shares near 0 or 1)."""

    k: int
    n: int
    value: float
    low: float
    high: float


def wilson(k: int, n: int, z: float = _Z95) -> Rate:
    if n == 0:
        return Rate(k=0, n=0, value=0.0, low=0.0, high=1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Rate(k=k, n=n, value=p, low=max(0.0, centre - half), high=min(1.0, centre + half))


class Returned(BaseModel):
    id: str
    verdict: str
    confidence: float


class BenchMiss(BaseModel):
    case: str
    kind: str
    area: str
    source: str
    expected: list[str]
    got: list[Returned]
    why: Literal["wrong first", "abstained", "no entry exists", "confident on a negative"]


class GroupRow(BaseModel):
    group: str
    positives: int
    top1: Rate
    top3: Rate
    negatives: int
    negatives_confident: Rate


class ReliabilityBin(BaseModel):
    """First answers whose confidence fell in [low, high): how sure the engine was, and how often right."""

    low: float
    high: float
    answers: int
    mean_confidence: float
    accuracy: float


class BenchmarkReport(BaseModel):
    split: str
    cases: int
    threads: int
    positives: int
    negatives: int
    top1: Rate = Field(description="positives whose first answer is an expected entry (no-entry cases count as misses)")
    top3: Rate
    mrr: float
    top1_answerable: Rate = Field(description="top-1 over the positives an entry exists for")
    no_entry: Rate = Field(description="positives that no entry answers yet (coverage gap)")
    confident: Rate = Field(description="positives answered with a confident 'match'")
    match_precision: Rate = Field(description="of the positives answered with 'match', the share whose first is right")
    match_precision_all: Rate = Field(description="of every 'match' answer (positives and negatives), the share right")
    negatives_confident: Rate = Field(description="negatives answered with a confident 'match'")
    by_kind: list[GroupRow]
    by_area: list[GroupRow]
    misses: list[BenchMiss]
    unknown_ids: list[str] = Field(default_factory=list, description="expected ids that are no corpus entry")
    reliability: list[ReliabilityBin] = Field(
        default_factory=list, description="confidence of first answers vs accuracy"
    )
    ece: float = Field(default=0.0, description="expected calibration error of the first answers (10 bins)")


def score(
    diagnose: Callable[[str], Result], cases: Iterable[RealCase], known_ids: set[str], split: str
) -> BenchmarkReport:
    """Run ``diagnose`` on every case and score it against the thread's ground truth."""
    cases = list(cases)
    pos = [c for c in cases if not c.negative]
    neg = [c for c in cases if c.negative]
    top1 = top3 = confident = confident_right = neg_confident = 0
    rr = 0.0
    groups: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    misses: list[BenchMiss] = []
    unknown: set[str] = set()
    firsts: list[tuple[float, bool]] = []
    for case in cases:
        result = diagnose(case.input)
        got = [Returned(id=m.id, verdict=m.verdict, confidence=round(m.confidence, 3)) for m in result.matches]
        if got:
            firsts.append((got[0].confidence, got[0].id in case.answers))
        claimed = any(m.verdict == "match" for m in result.matches)
        keys = [("kind", case.kind), ("area", case.area)]
        if case.negative:
            neg_confident += claimed
            for key in keys:
                groups[key][3] += 1
                groups[key][4] += claimed
            if claimed:
                misses.append(_miss(case, got, "confident on a negative"))
            continue
        unknown |= {e for e in case.answers if e not in known_ids}
        ids = [g.id for g in got]
        rank = next((i for i, g in enumerate(ids) if g in case.answers), None)
        first_is_match = bool(got) and got[0].verdict == "match"
        confident += first_is_match
        confident_right += first_is_match and rank == 0
        top1 += rank == 0
        top3 += rank is not None and rank < 3
        rr += 0.0 if rank is None else 1 / (rank + 1)
        for key in keys:
            groups[key][0] += 1
            groups[key][1] += rank == 0
            groups[key][2] += rank is not None and rank < 3
        if rank != 0:
            why: Literal["wrong first", "abstained", "no entry exists"] = (
                "no entry exists" if case.no_entry else "abstained" if not got else "wrong first"
            )
            misses.append(_miss(case, got, why))
    answerable = sum(1 for c in pos if not c.no_entry)
    reliability_rows, ece = reliability(firsts)
    return BenchmarkReport(
        split=split,
        cases=len(cases),
        threads=len({c.thread for c in cases}),
        positives=len(pos),
        negatives=len(neg),
        top1=wilson(top1, len(pos)),
        top3=wilson(top3, len(pos)),
        mrr=rr / len(pos) if pos else 0.0,
        # A no-entry case can never be first-right, so every first-right positive is an answerable one.
        top1_answerable=wilson(top1, answerable),
        no_entry=wilson(len(pos) - answerable, len(pos)),
        confident=wilson(confident, len(pos)),
        match_precision=wilson(confident_right, confident),
        match_precision_all=wilson(confident_right, confident + neg_confident),
        negatives_confident=wilson(neg_confident, len(neg)),
        by_kind=_rows(groups, "kind"),
        by_area=_rows(groups, "area"),
        misses=misses,
        unknown_ids=sorted(unknown),
        reliability=reliability_rows,
        ece=ece,
    )


def reliability(firsts: list[tuple[float, bool]], bins: int = 10) -> tuple[list[ReliabilityBin], float]:
    """First answers (confidence, right) in ``bins`` equal bins: the reliability table and the expected
    calibration error (the answers' share-weighted gap between mean confidence and accuracy)."""
    rows: list[ReliabilityBin] = []
    ece = 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = [(p, ok) for p, ok in firsts if low <= p < high or (b == bins - 1 and p == 1.0)]
        if not inside:
            continue
        mean = sum(p for p, _ in inside) / len(inside)
        accuracy = sum(ok for _, ok in inside) / len(inside)
        ece += len(inside) / len(firsts) * abs(mean - accuracy)
        rows.append(ReliabilityBin(low=low, high=high, answers=len(inside), mean_confidence=mean, accuracy=accuracy))
    return rows, ece


def _miss(case: RealCase, got: list[Returned], why: str) -> BenchMiss:
    return BenchMiss(
        case=case.id,
        kind=case.kind,
        area=case.area,
        source=case.source,
        expected=case.expected,
        got=got[:3],
        why=why,  # type: ignore[arg-type]
    )


def _rows(groups: dict[tuple[str, str], list[int]], dimension: str) -> list[GroupRow]:
    return [
        GroupRow(
            group=name,
            positives=s[0],
            top1=wilson(s[1], s[0]),
            top3=wilson(s[2], s[0]),
            negatives=s[3],
            negatives_confident=wilson(s[4], s[3]),
        )
        for (dim, name), s in sorted(groups.items())
        if dim == dimension
    ]


def _pct(rate: Rate) -> str:
    return f"{rate.value:6.1%}  [{rate.low:.1%}, {rate.high:.1%}]  {rate.k}/{rate.n}"


def _short(rate: Rate) -> str:
    return "-" if rate.n == 0 else f"{rate.value:.0%} [{rate.low:.0%}-{rate.high:.0%}]"


def render_benchmark(report: BenchmarkReport) -> None:
    from rich.table import Table

    from kb.render_text import console

    out = console()
    out.print(
        f"split {report.split}: {report.cases} cases from {report.threads} threads "
        f"({report.positives} positive, {report.negatives} negative); Wilson 95 % intervals",
        markup=False,
    )
    headline = Table("figure", "value  [95 % interval]  k/n")
    for label, rate in (
        ("top-1", report.top1),
        ("top-3", report.top3),
        ("top-1 where an entry exists", report.top1_answerable),
        ("positives with no entry", report.no_entry),
        ("positives answered 'match'", report.confident),
        ("precision of 'match' (positives)", report.match_precision),
        ("precision of 'match' (all)", report.match_precision_all),
        ("confident on negatives", report.negatives_confident),
    ):
        headline.add_row(label, _pct(rate))
    headline.add_row("MRR", f"{report.mrr:.3f}")
    out.print(headline)
    for title, rows in (("kind", report.by_kind), ("area", report.by_area)):
        table = Table(title, "pos", "top-1", "top-3", "neg", "neg claimed")
        for row in rows:
            table.add_row(
                row.group,
                str(row.positives),
                _short(row.top1),
                _short(row.top3),
                str(row.negatives),
                _short(row.negatives_confident),
            )
        out.print(table)
    if report.reliability:
        table = Table("confidence", "answers", "mean confidence", "right")
        for cell in report.reliability:
            band = f"{cell.low:.1f}-{cell.high:.1f}"
            table.add_row(band, str(cell.answers), f"{cell.mean_confidence:.2f}", f"{cell.accuracy:.0%}")
        out.print(table)
        out.print(f"expected calibration error of the first answers: {report.ece:.3f}", markup=False)
    if report.unknown_ids:
        out.print(f"expected ids that are no entry: {', '.join(report.unknown_ids)}", style="red", markup=False)
    for miss in report.misses:
        got = ", ".join(f"{g.id} ({g.verdict} {g.confidence:.2f})" for g in miss.got) or "nothing"
        out.print(
            f"MISS {miss.case} [{miss.kind}/{miss.area}] {miss.why}: expected {miss.expected or 'abstain'} "
            f"got {got}  {miss.source}",
            markup=False,
        )
