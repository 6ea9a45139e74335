"""`verl-doctor eval`: how well the engine ranks the expected entries on a set of cases."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kb.inputs import InputError, decode


class Case(BaseModel):
    name: str
    input: str
    expected: list[str]
    shape: str = "unknown"
    messages: list[dict[str, str]] | None = Field(default=None, description="a conversation (the ask path)")


class Miss(BaseModel):
    case: str
    expected: list[str]
    got: list[str]
    shape: str


class AreaRow(BaseModel):
    area: str
    cases: int
    top1: float
    top3: float


class EvalReport(BaseModel):
    cases: int
    positives: int
    negatives: int
    top1: float
    top3: float
    mrr: float
    negatives_confident: float = Field(description="share of negatives answered with a confident 'match'")
    abstention_precision: float
    abstention_recall: float
    areas: list[AreaRow]
    misses: list[Miss]
    unknown_ids: list[str] = Field(default_factory=list)


def _repo_root_for(path: Path) -> Path:
    for parent in [path.resolve(), *path.resolve().parents]:
        if (parent / "pyproject.toml").exists():
            return parent
    return Path.cwd()


def load_cases(paths: Iterable[Path]) -> list[Case]:
    """Cases from JSONL files (directories are searched for *.jsonl). Raises ValueError with file:line."""
    files: list[Path] = []
    for p in paths:
        files += sorted(p.rglob("*.jsonl")) if p.is_dir() else [p]
    cases: list[Case] = []
    for f in files:
        root = _repo_root_for(f)
        for n, raw in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not raw.strip():
                continue
            try:
                obj: dict[str, Any] = json.loads(raw)
                messages = None
                if "messages" in obj:
                    messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in obj["messages"]]
                    text = "\n".join(m["content"] for m in messages if m["role"] == "user")
                elif "input_file" in obj:
                    src = Path(obj["input_file"])
                    src = src if src.is_absolute() else root / src
                    text = decode(src.read_bytes(), str(src)).text
                else:
                    text = str(obj["input"])
                cases.append(
                    Case(
                        name=f"{f.name}:{n}",
                        input=text,
                        expected=list(obj.get("expected", [])),
                        shape=str(obj.get("shape", "unknown")),
                        messages=messages,
                    )
                )
            except (ValueError, KeyError, OSError, InputError) as exc:
                raise ValueError(f"{f}:{n}: bad case: {exc}") from None
    if not cases:
        raise ValueError("no cases found")
    return cases


def run_eval(
    diagnoser: Any, cases: list[Case], ranker: Callable[[Case], tuple[list[str], bool, bool]] | None = None
) -> EvalReport:
    """Score ``diagnoser.diagnose`` on the cases, or ``ranker`` (case -> ranked ids, abstained, confident)."""
    top1 = top3 = 0
    rr = 0.0
    positives = negatives = neg_confident = 0
    abstained_total = abstained_correct = 0
    area_stats: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    misses: list[Miss] = []
    known = set(diagnoser.entries)
    unknown: set[str] = set()
    for case in cases:
        if ranker is not None:
            got, abstained, confident = ranker(case)
        else:
            result = diagnoser.diagnose(case.input, top=5)
            got = [m.id for m in result.matches]
            abstained, confident = result.abstained, any(m.verdict == "match" for m in result.matches)
        if abstained:
            abstained_total += 1
        if not case.expected:
            negatives += 1
            neg_confident += confident
            if abstained:
                abstained_correct += 1
            stats = area_stats["(negative)"]
            stats[0] += 1
            stats[1] += not confident
            stats[2] += not confident
            if confident:
                misses.append(Miss(case=case.name, expected=[], got=got[:3], shape=case.shape))
            continue
        positives += 1
        unknown |= {e for e in case.expected if e not in known}
        area = diagnoser.entries[case.expected[0]].area if case.expected[0] in known else "(unknown id)"
        rank = next((i for i, g in enumerate(got) if g in case.expected), None)
        stats = area_stats[area]
        stats[0] += 1
        if rank == 0:
            top1 += 1
            stats[1] += 1
        if rank is not None and rank < 3:
            top3 += 1
            stats[2] += 1
        if rank is not None:
            rr += 1 / (rank + 1)
        if rank != 0:
            misses.append(Miss(case=case.name, expected=case.expected, got=got[:3], shape=case.shape))
    return EvalReport(
        cases=len(cases),
        positives=positives,
        negatives=negatives,
        top1=top1 / positives if positives else 0.0,
        top3=top3 / positives if positives else 0.0,
        mrr=rr / positives if positives else 0.0,
        negatives_confident=neg_confident / negatives if negatives else 0.0,
        abstention_precision=abstained_correct / abstained_total if abstained_total else 1.0,
        abstention_recall=abstained_correct / negatives if negatives else 1.0,
        areas=[AreaRow(area=a, cases=s[0], top1=s[1] / s[0], top3=s[2] / s[0]) for a, s in sorted(area_stats.items())],
        misses=misses,
        unknown_ids=sorted(unknown),
    )


def render_report(report: EvalReport) -> None:
    from rich.table import Table

    from kb.render_text import console

    out = console()
    out.print(
        f"{report.cases} cases ({report.positives} positive, {report.negatives} negative)\n"
        f"top-1 {report.top1:.1%}  top-3 {report.top3:.1%}  MRR {report.mrr:.3f}\n"
        f"confident answers on negatives {report.negatives_confident:.1%}; abstention precision "
        f"{report.abstention_precision:.1%}, recall {report.abstention_recall:.1%}"
    )
    table = Table("area", "cases", "top-1", "top-3")
    for row in report.areas:
        table.add_row(row.area, str(row.cases), f"{row.top1:.0%}", f"{row.top3:.0%}")
    out.print(table)
    if report.unknown_ids:
        out.print(f"expected ids that are no entry: {', '.join(report.unknown_ids)}", style="red")
    for miss in report.misses:
        out.print(f"MISS {miss.case} [{miss.shape}] expected {miss.expected or 'abstain'} got {miss.got}", markup=False)
