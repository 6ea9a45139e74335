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
@click.option(
    "--split",
    type=click.Choice(["dev", "holdout"]),
    help="Of a real benchmark directory (tests/eval/real): score this split only (default: both).",
)
@click.option(
    "--fit",
    is_flag=True,
    help="With --split dev: fit the confidence model on it and write kb/data/calibration.json, then score again.",
)
def eval_cmd(
    cases: tuple[str, ...],
    corpus_path: str | None,
    as_json: bool,
    no_semantic: bool,
    ask_path: bool,
    split: str | None,
    fit: bool,
) -> None:
    """Score the engine on eval cases (JSONL files or directories of them): top-1, top-3, MRR,
    abstention precision and recall, a per-area table, and every miss.

    A real benchmark directory (one with a manifest.json, like tests/eval/real) is scored per split with
    Wilson 95 % intervals: top-1, top-3, MRR, positives with no entry, positives answered 'match' and the
    precision of 'match', confident answers on negatives, per kind and per area, and every miss with
    what was returned. With --json and --split, one report; without --split, {"dev": ..., "holdout": ...}."""
    from kb.benchmark import is_benchmark_dir
    from kb.evaluation import load_cases, run_eval

    paths = [Path(c) for c in cases]
    if any(is_benchmark_dir(p) for p in paths):
        if len(paths) > 1 or ask_path:
            fail("a real benchmark directory is scored alone, and not with --ask")
        if fit and split != "dev":
            fail("--fit fits on --split dev only (the holdout is never fitted on)")
        _run_benchmark(paths[0], split, corpus_path, as_json, no_semantic, fit)
        return
    if fit:
        fail("--fit needs a real benchmark directory and --split dev")
    if split is not None:
        fail("--split needs a real benchmark directory (one with a manifest.json, like tests/eval/real)")
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


def _run_benchmark(
    directory: Path, split: str | None, corpus_path: str | None, as_json: bool, no_semantic: bool, fit: bool
) -> None:
    import json

    from kb.benchmark import SPLITS, fit_calibration, load_split, render_benchmark, score

    try:
        chosen = {s: load_split(directory, s) for s in SPLITS if split in (None, s)}
    except ValueError as exc:
        fail(str(exc))
    diagnoser = common.build_diagnoser(corpus_path, semantic=not no_semantic)
    if fit:
        from kb import calibration

        fitted = fit_calibration(diagnoser, chosen["dev"], f"dev split of {directory} ({len(chosen['dev'])} cases)")
        target = calibration.bundled_path()
        target.write_text(json.dumps(fitted.to_json(), indent=1) + "\n", encoding="utf-8")
        diagnoser.calibration = fitted
        click.echo(
            f"fitted on {len(chosen['dev'])} dev cases: match from {fitted.match_threshold:.3f}, "
            f"possible from {fitted.possible_threshold:.3f}; written to {target}",
            err=True,
        )
    known = set(diagnoser.entries)
    reports = {s: score(lambda text: diagnoser.diagnose(text, top=5), cases, known, s) for s, cases in chosen.items()}
    if as_json:
        if len(reports) == 1:
            click.echo(next(iter(reports.values())).model_dump_json(indent=1))
        else:
            click.echo(json.dumps({s: r.model_dump(mode="json") for s, r in reports.items()}, indent=1))
        return
    for report in reports.values():
        render_benchmark(report)


def _run_ask_eval(diagnoser: Diagnoser, cases: list[Case], as_json: bool) -> None:
    """`verl-doctor eval --ask`: the engine figures over the ask path, then the answer-only ones."""
    from kb.evaluation import render_report, run_ask_eval
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
