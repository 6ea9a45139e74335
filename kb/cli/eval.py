"""``verl-doctor eval``: the engine (or, with ``--ask``, the ask path) scored on eval cases."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kb.cli import common
from kb.cli.common import corpus_option, fail

if TYPE_CHECKING:
    from kb.engine import Diagnoser
    from kb.evaluation import Case


@click.command("eval")
@click.argument("cases", nargs=-1, required=True, type=click.Path(exists=True))
@corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--no-semantic", is_flag=True, help="Rules only.")
@click.option(
    "--ask",
    "ask_path",
    is_flag=True,
    help="Score `verl-doctor ask` (conversations, citations, the LLM at $VERL_DOCTOR_LLM_URL if set).",
)
def eval_cmd(cases: tuple[str, ...], corpus_path: str | None, as_json: bool, no_semantic: bool, ask_path: bool) -> None:
    """Score the engine on eval cases (JSONL files or directories of them): top-1, top-3, MRR,
    abstention precision and recall, a per-area table, and every miss."""
    from kb.evaluation import load_cases, run_eval

    try:
        loaded_cases = load_cases([Path(c) for c in cases])
    except ValueError as exc:
        fail(str(exc))
    diagnoser = common.build_diagnoser(corpus_path, semantic=not no_semantic)
    if ask_path:
        _run_ask_eval(diagnoser, loaded_cases, as_json)
        return
    report = run_eval(diagnoser, loaded_cases)
    if as_json:
        click.echo(report.model_dump_json(indent=1))
    else:
        from kb.evaluation import render_report

        render_report(report)


def _run_ask_eval(diagnoser: Diagnoser, cases: list[Case], as_json: bool) -> None:
    """`verl-doctor eval --ask`: the engine figures over the ask path, then the answer-only ones."""
    from kb.ask import run_ask_eval
    from kb.evaluation import render_report
    from kb.llm import LLMClient

    report = run_ask_eval(diagnoser, cases, LLMClient.from_env())
    if as_json:
        click.echo(report.model_dump_json(indent=1))
        return
    render_report(report.report)
    click.echo(
        f"answers: {report.answered} cite an entry, {report.abstained} abstain; cite-or-abstain "
        f"{report.cited_or_abstained:.1%}; first citation expected on answered positives "
        f"{report.answered_precision:.1%}"
    )
    if report.llm_used or report.llm_rejected:
        click.echo(f"LLM: {report.llm_used} answers written by the LLM, {report.llm_rejected} replies rejected")
    click.echo(f"overrides in answers that no cited entry holds: {len(report.unsupported_overrides)}")
    for item in report.unsupported_overrides:
        click.echo(f"  {item}")
