"""``verl-doctor check-overrides``: Hydra overrides checked against a verl release before a job is submitted."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kb.cli.common import EXIT_FINDINGS, EXIT_OK, fail


@click.command("check-overrides", context_settings={"ignore_unknown_options": True})
@click.option(
    "--verl-version", metavar="V", help="verl version to check against (default: the newest release verl-doctor knows)."
)
@click.option(
    "--file",
    "file_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Read overrides from a .hydra/overrides.yaml, a launch script or a saved command line ('-' for stdin).",
)
@click.option(
    "--config-name",
    metavar="NAME",
    help=(
        "The trainer config the job launches with (ppo_trainer or ppo_megatron_trainer; default: the one a "
        "launch command given names)."
    ),
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.argument("overrides", nargs=-1, type=click.UNPROCESSED)
def check_overrides_cmd(
    verl_version: str | None,
    file_path: str | None,
    config_name: str | None,
    as_json: bool,
    overrides: tuple[str, ...],
) -> None:
    """Check Hydra overrides against a verl release before you submit a job.

    \b
    verl-doctor check-overrides --verl-version 0.9.1 -- ray_init.num_cpus=16 trainer.nnode=2
    verl-doctor check-overrides --file outputs/2025-06-01/12-00-00/.hydra/overrides.yaml
    verl-doctor check-overrides -- "python -m verl.trainer.main_ppo data.train_batch_size=256 ..."

    Each override is fine, needs '+', must drop '+', is unknown (with a did-you-mean from the rename
    table and the key set), or is accepted but ignored by that version; its value is checked too: Hydra's
    grammar (a,b is a sweep Hydra refuses; a quoted '[a,b]' is a string), the key's type, and the enum
    values that release validates (rollout.mode=sync raises from 0.7.0, rollout.name, trainer.logger
    backends, adv_estimator, loss_agg_mode, ...), with the value to use. Exit 1 when any would fail or
    be ignored. Keys are checked against FSDP's trainer config, or Megatron's with --config-name
    ppo_megatron_trainer (or a launch command that says so); without either, a key that only Megatron's
    config has is told apart, not refused.
    """
    from kb.overrides import check_overrides, config_name_of, extract_overrides
    from kb.versions import VersionError

    texts: list[str] = []
    launched = config_name
    if file_path:
        try:
            raw = sys.stdin.read() if file_path == "-" else Path(file_path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"cannot read {file_path}: {getattr(exc, 'strerror', None) or exc}")
        texts += extract_overrides(raw)
        launched = launched or config_name_of(raw)
    for arg in overrides:
        command = " " in arg.strip() or "\n" in arg
        texts += extract_overrides(arg) if command else [arg]
        launched = launched or (config_name_of(arg) if command else None)
    if not texts:
        fail("no overrides given: pass them after '--' or with --file")
    try:
        report = check_overrides(texts, verl_version, launched)
    except VersionError as exc:
        fail(str(exc))
    if as_json:
        click.echo(report.model_dump_json(indent=1))
    else:
        from kb.render_text import render_override_report

        render_override_report(report)
    sys.exit(EXIT_FINDINGS if report.failed else EXIT_OK)
