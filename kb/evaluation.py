"""`verl-doctor eval`: how well the engine ranks the expected entries on a set of cases."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from kb.inputs import InputError, decode

if TYPE_CHECKING:
    from kb.ask import AskAnswer
    from kb.engine import Diagnoser
    from kb.llm import LLMClient


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
    diagnoser: Diagnoser, cases: list[Case], ranker: Callable[[Case], tuple[list[str], bool, bool]] | None = None
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


class AskEvalReport(BaseModel):
    """`verl-doctor eval --ask`: the engine figures over the ask path, plus what only answers have."""

    report: EvalReport = Field(description="the EvalReport over the ranked citations (then the closest entries)")
    answered: int = Field(description="answers that cite an entry (did not abstain)")
    abstained: int
    cited_or_abstained: float = Field(description="share of answers that cite at least one entry or abstain")
    answered_precision: float = Field(description="of answered positives, the share whose first citation is expected")
    llm_used: int = 0
    llm_rejected: int = 0
    unsupported_overrides: list[str] = Field(
        default_factory=list, description="case: override in an answer that no cited entry or user message holds"
    )


def _conversation(case: Case) -> list[dict[str, str]]:
    return case.messages or [{"role": "user", "content": case.input}]


def run_ask_eval(diagnoser: Diagnoser, cases: list[Case], llm: LLMClient | None = None) -> AskEvalReport:
    """The cases through ``kb.ask.ask`` (a case's ``messages``, else its input as one user turn): the ranked
    citations scored as :func:`run_eval` scores the engine, then the figures only answers have."""
    from kb.ask import ChatMessage, ask, grounding_texts
    from kb.llm import unsupported_overrides

    answers: dict[str, AskAnswer] = {}

    def ranker(case: Case) -> tuple[list[str], bool, bool]:
        msgs = [ChatMessage.model_validate(m) for m in _conversation(case)]
        answer = ask(diagnoser, msgs, llm=llm, top=3)
        answers[case.name] = answer
        got = list(dict.fromkeys([c.id for c in answer.citations] + [c.id for c in answer.closest]))
        return got, answer.abstained, not answer.abstained

    report = run_eval(diagnoser, cases, ranker)
    answered = [a for a in answers.values() if not a.abstained]
    grounded = sum(1 for a in answers.values() if a.citations or a.abstained)
    hits = sum(
        1
        for c in cases
        if c.expected and not answers[c.name].abstained and answers[c.name].citations[0].id in c.expected
    )
    answered_pos = sum(1 for c in cases if c.expected and not answers[c.name].abstained)
    unsupported: list[str] = []
    for c in cases:
        a = answers[c.name]
        if a.abstained:
            continue
        user = [m["content"] for m in _conversation(c) if m["role"] == "user"]
        allowed = grounding_texts([diagnoser.entries[x.id] for x in a.citations], user)
        unsupported += [f"{c.name}: {t}" for t in unsupported_overrides(a.answer, allowed)]
    return AskEvalReport(
        report=report,
        answered=len(answered),
        abstained=len(answers) - len(answered),
        cited_or_abstained=grounded / len(answers) if answers else 1.0,
        answered_precision=hits / answered_pos if answered_pos else 1.0,
        llm_used=sum(1 for a in answers.values() if a.mode == "llm"),
        llm_rejected=sum(1 for a in answers.values() if a.llm_note and "rejected" in a.llm_note),
        unsupported_overrides=unsupported,
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
