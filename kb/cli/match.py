"""``verl-doctor match``: a traceback, a log excerpt or a question diagnosed (one, or a JSONL batch)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kb.cli import common
from kb.cli.common import EXIT_FINDINGS, EXIT_OK, corpus_option, fail

if TYPE_CHECKING:
    from kb.engine import Diagnoser


@click.command("match")
@click.argument("source", default="-", metavar="[FILE|-]")
@corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (the schema every surface uses).")
@click.option(
    "--jsonl",
    is_flag=True,
    help='Batch mode: one {"id", "input", "top"} request a line on stdin (top optional), one result a line out.',
)
@click.option("--top", default=3, show_default=True, type=click.IntRange(1, 20), help="How many diagnoses to show.")
@click.option("--no-semantic", is_flag=True, help="Rules only: never load the embedding model.")
def match_cmd(source: str, corpus_path: str | None, as_json: bool, jsonl: bool, top: int, no_semantic: bool) -> None:
    """Diagnose a traceback, a log excerpt or a question (FILE, or stdin with '-').

    \b
    verl-doctor match error.log
    python -m verl.trainer.main_ppo ... 2>&1 | tail -200 | verl-doctor match
    verl-doctor match --json error.log

    Exit 0 when a known problem matches, 1 when nothing matches with confidence, 2 on bad input.
    """
    from kb.inputs import InputError, read_input

    if jsonl:
        _match_jsonl(common.build_diagnoser(corpus_path, semantic=not no_semantic), top)
        return
    interactive = source == "-" and sys.stdin.isatty()
    if interactive:
        if not no_semantic:
            common.prefetch_model()  # a person is pasting: the model is ready by the time they press Ctrl-D
        diagnoser = common.build_diagnoser(corpus_path, semantic=not no_semantic)
    try:
        if source == "-":
            if interactive:
                click.echo("Paste the traceback or log, then press Ctrl-D:", err=True)
            given = read_input(sys.stdin.buffer, "stdin")
        else:
            path = Path(source)
            if path.is_dir():
                fail(f"{source} is a directory; use `verl-doctor scan {source}` for a job's output directory")
            with path.open("rb") as fh:
                given = read_input(fh, source)
    except OSError as exc:
        fail(f"cannot read {source}: {exc.strerror or exc}")
    except InputError as exc:
        fail(str(exc))
    if not interactive:
        if not no_semantic and common.likely_semantic(given.text):
            common.prefetch_model()
        diagnoser = common.build_diagnoser(corpus_path, semantic=not no_semantic)
    result = diagnoser.diagnose_input(given, top=top)
    if as_json:
        click.echo(result.model_dump_json(indent=1))
    else:
        from kb.render_text import render_result

        render_result(result)
    common.finish(EXIT_OK if not result.abstained else EXIT_FINDINGS)


def _match_jsonl(diagnoser: Diagnoser, top: int) -> None:
    from kb.batch import match_jsonl

    match_jsonl(diagnoser, top, sys.stdin.buffer, sys.stdout)
