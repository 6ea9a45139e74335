"""``verl-doctor eval``: the engine (or, with ``--ask``, the ask path) scored on eval cases."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kb.cli import common
from kb.cli.common import corpus_option, fail

if TYPE_CHECKING:
    from collections.abc import Callable

    from kb.benchmark import RealCase
    from kb.engine import Diagnoser
    from kb.evaluation import Case
    from kb.result import Result


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
    help=(
        "With --split dev: cross-validate the calibrators on it (grouped by thread), write the chosen one to "
        "kb/data/calibration.json and score with it; exit 1 and write nothing if none reaches 97 % precision."
    ),
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
        if fit and no_semantic:
            fail("--fit fits what the engine sees with its semantic layer; drop --no-semantic")
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

    from kb.benchmark import SPLITS, load_split, render_benchmark, score

    try:
        chosen = {s: load_split(directory, s) for s in SPLITS if split in (None, s)}
    except ValueError as exc:
        fail(str(exc))
    diagnoser = common.build_diagnoser(corpus_path, semantic=not no_semantic)
    known = set(diagnoser.entries)
    if fit:
        diagnose = _fit(diagnoser, chosen["dev"])
        reports = {"dev": score(diagnose, chosen["dev"], known, "dev")}
    else:
        reports = {
            s: score(lambda text: diagnoser.diagnose(text, top=5), cases, known, s) for s, cases in chosen.items()
        }
    if as_json:
        if len(reports) == 1:
            click.echo(next(iter(reports.values())).model_dump_json(indent=1))
        else:
            click.echo(json.dumps({s: r.model_dump(mode="json") for s, r in reports.items()}, indent=1))
        return
    for report in reports.values():
        render_benchmark(report)


def _fit(diagnoser: Diagnoser, dev: list[RealCase]) -> Callable[[str], Result]:
    """`eval --fit`: every calibrator cross-validated on dev, the chosen one written to
    kb/data/calibration.json and set on ``diagnoser``; returns how it answers each dev case (from the one
    pass the fit made, not a second). Exits 1 and writes nothing when the chosen calibrator has no `match`
    region at all."""
    import json

    from kb import calibration
    from kb.benchmark import unseen
    from kb.calibration_fit import FitError, collect, fit, recalibrated, render_table

    collected = collect(diagnoser, dev)
    # Fitted on the dev cases no entry was written from: on the others the rules and the wording were made
    # from the very text, so they are nearly always right there and a map fitted on them is sure of itself
    # on a user's next paste (session 4's fit on all of dev: ECE 0.035 on dev, 0.11 on its unseen cases).
    fresh = {c.id for c in unseen(dev, diagnoser.entries.values())}
    pairs = [(case, c) for case, c in zip(dev, collected, strict=True) if case.id in fresh]
    fit_cases, fit_on = [case for case, _ in pairs], [c for _, c in pairs]
    note = (
        f"dev split, the cases no entry cites: {len(fit_cases)} of {len(dev)} cases "
        f"({sum(not c.negative for c in fit_cases)} positives), {len({c.thread for c in fit_cases})} threads; "
        f"corpus {diagnoser.kb_version}, {len(diagnoser.entries)} entries"
    )
    click.echo(f"fitting on {note}", err=True)
    try:
        fitted = fit(fit_on, note)
    except FitError as exc:
        fail(f"{exc}\nnothing written: {calibration.bundled_path()} is unchanged", code=1)
    click.echo(render_table(fitted.table, fitted.baseline), err=True)
    target = calibration.bundled_path()
    before = calibration.load(target)
    if before is not None and before.cv.get("chosen"):
        # So that a refit after corpus changes shows what it replaces, beside what it ships.
        row = before.cv["chosen"]
        click.echo(
            f"replacing: {row.get('calibrator')} (ECE {row.get('ece')}, match precision {row.get('match_precision')}, "
            f"{row.get('positives_matched')} positives matched), fitted on {before.fitted_on}",
            err=True,
        )
    target.write_text(json.dumps(fitted.calibration.to_json(), indent=1) + "\n", encoding="utf-8")
    diagnoser.calibration = fitted.calibration
    cal = fitted.calibration
    click.echo(
        f"chosen: {fitted.chosen.label}: match from {cal.match_threshold}, possible from "
        f"{cal.possible_threshold}; written to {target}",
        err=True,
    )
    click.echo(
        "the figures below score all of dev with the fitted map (in sample for the cases it was fitted on); "
        "the table above, out of fold on the unseen cases, is the measure",
        err=True,
    )
    by_input = {case.input: c for case, c in zip(dev, collected, strict=True)}
    return lambda text: recalibrated(diagnoser, by_input[text])


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
