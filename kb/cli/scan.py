"""``verl-doctor scan``: job output directories scanned. Imports stay light: the scanner, Ray and the
embedding model load inside the command, and only when needed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kb.cli import common
from kb.cli.common import EXIT_FINDINGS, EXIT_OK, corpus_option, fail

if TYPE_CHECKING:
    from kb.engine import Diagnoser


@click.command("scan")
@click.argument("dirs", nargs=-1, required=True, metavar="DIR [DIR...]")
@click.option("--json", "fmt", flag_value="json", help="Print the report as JSON (findings reuse the match schema).")
@click.option("--markdown", "fmt", flag_value="markdown", help="Print a Markdown report to paste into an issue.")
@click.option("--sarif", "fmt", flag_value="sarif", help="Print SARIF 2.1.0 (code-scanning tools).")
@click.option("--follow", is_flag=True, help="Watch running jobs; print new findings as they appear (Ctrl-C stops).")
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="auto",
    default=None,
    metavar="[ADDRESS]",
    help="Fan the files out over an existing Ray cluster (default address: auto). Needs verl-doctor[ray].",
)
@click.option("--workers", type=click.IntRange(1, 1024), help="Local worker processes (default: one per core).")
@corpus_option
@click.option("--no-semantic", is_flag=True, help="Rules only: never load the embedding model.")
@click.option("--interval", default=1.0, hidden=True, type=click.FloatRange(0.05, 60.0))
def scan_cmd(
    dirs: tuple[str, ...],
    fmt: str | None,
    follow: bool,
    ray_address: str | None,
    workers: int | None,
    corpus_path: str | None,
    no_semantic: bool,
    interval: float,
) -> None:
    """Scan verl job output directories (or log files): driver logs, Ray worker logs, Hydra outputs, the file
    logger's JSONL, W&B run logs, .gz and .zst files.

    \b
    verl-doctor scan outputs/2025-06-01/12-00-00 /tmp/ray/session_latest
    verl-doctor scan --markdown job/ > report.md
    verl-doctor scan --follow job/            # a running job
    verl-doctor scan --ray=auto /shared/jobs/*

    Errors are grouped across ranks and files, the first failure is told from the cascade it caused
    (NCCL watchdog timeouts, dead actors, SIGTERM), metrics are checked against known signatures, and
    the job's overrides are checked for its verl version. Exit 0 clean, 1 findings, 2 usage or I/O error.
    """
    paths = list(dirs)
    if ray_address is not None and Path(ray_address).exists() and "://" not in ray_address:
        paths.insert(0, ray_address)  # `--ray DIR`: the flag without an address, then a directory
        ray_address = "auto"
    missing = [p for p in paths if not Path(p).exists() and not Path(p).is_symlink()]
    if missing:
        fail(f"no such file or directory: {', '.join(missing)}")
    if follow and fmt in ("markdown", "sarif"):
        fail("--follow prints findings as they appear: use it with the text or --json output")
    if follow and ray_address is not None:
        fail("--follow and --ray cannot be combined")

    targets = [Path(p) for p in paths]
    if follow:
        _follow(targets, common.build_diagnoser(corpus_path, semantic=not no_semantic), fmt == "json", interval)
        return

    from kb.scan.executors import LocalExecutor, RayExecutor, ScanError
    from kb.scan.runner import Executor, scan_with_warm_start

    executor: Executor = RayExecutor(ray_address) if ray_address is not None else LocalExecutor(workers)
    try:
        report = scan_with_warm_start(
            targets,
            common.corpus_dir(corpus_path),
            lambda: common.build_diagnoser(corpus_path, semantic=not no_semantic),
            executor,
            progress=sys.stderr.isatty(),
        )
    except ScanError as exc:
        fail(str(exc))
    if all(s.path in {str(t) for t in targets} for s in report.skipped) and len(report.skipped) == len(targets):
        from kb.render_text import terminal_safe

        fail("\nverl-doctor: ".join(f"cannot read {terminal_safe(s.path)}: {s.reason}" for s in report.skipped))
    from kb.scan.report import nothing_read

    if (why := nothing_read(report)) is not None:
        fail(why)
    if fmt == "json":
        click.echo(report.model_dump_json(indent=1))
    elif fmt == "markdown":
        from kb.scan.render import render_markdown

        click.echo(render_markdown(report), nl=False)
    elif fmt == "sarif":
        from kb.scan.render import render_sarif

        click.echo(render_sarif(report))
    else:
        from kb.scan.render import render_terminal

        render_terminal(report)
    sys.exit(EXIT_FINDINGS if report.findings else EXIT_OK)


def _follow(targets: list[Path], diagnoser: Diagnoser, as_json: bool, interval: float) -> None:
    from rich.console import Console

    from kb.scan.follow import Follower
    from kb.scan.render import render_finding
    from kb.scan.report import Finding

    console = Console(highlight=False, soft_wrap=True)
    if not as_json:
        click.echo(f"following {', '.join(map(str, targets))} (Ctrl-C to stop)", err=True)

    def emit(f: Finding) -> None:
        if as_json:
            click.echo(f.model_dump_json())
        else:
            render_finding(console, f, [])
        sys.stdout.flush()

    follower = Follower(targets, diagnoser)
    count = follower.run(emit, interval=interval)
    sys.exit(EXIT_FINDINGS if count else EXIT_OK)
