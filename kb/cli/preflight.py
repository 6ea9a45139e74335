"""``verl-doctor preflight``: a launch checked the way verl checks it at start-up, before the job waits for GPUs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kb.cli.common import EXIT_FINDINGS, EXIT_OK, fail


@click.command("preflight", context_settings={"ignore_unknown_options": True})
@click.option(
    "--verl-version",
    metavar="V",
    help="verl release to check for (default: the installed verl, else the newest known).",
)
@click.option("--nnodes", type=click.IntRange(min=1), help="trainer.nnodes, when the overrides do not set it.")
@click.option(
    "--gpus-per-node", type=click.IntRange(min=1), help="trainer.n_gpus_per_node, when the overrides do not set it."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.argument("words", nargs=-1, type=click.UNPROCESSED)
def preflight_cmd(
    verl_version: str | None, nnodes: int | None, gpus_per_node: int | None, as_json: bool, words: tuple[str, ...]
) -> None:
    """Say whether verl would start with this launch, before you submit it; each problem with the fix.

    \b
    verl-doctor preflight -- python -m verl.trainer.main_ppo data.train_batch_size=1000 trainer.n_gpus_per_node=8 ...
    verl-doctor preflight run_grpo.sh            # a launch script, read as a shell reads it
    verl-doctor preflight outputs/.../.hydra/overrides.yaml   (or a resolved config.yaml; '-' reads stdin)
    verl-doctor preflight outputs/2025-06-01/12-00-00         (a job directory: its .hydra/overrides.yaml)

    Composes the release's defaults with the overrides and runs what verl checks at start-up for that release:
    Hydra's refusals (unknown keys, '+', grammar, sweeps), validate_config and the config dataclasses (batch
    sizes per data-parallel rank with rollout.n, micro batches unset or set twice, megatron parallel sizes,
    ulysses, loss_agg_mode, val_kwargs), then what fails after start-up (rollout name and mode, token budgets
    of dynamic batching). Exit 0 when verl would start, 1 with findings, 2 on a usage or I/O error.
    """
    from kb.preflight import release_for
    from kb.preflight.api import NoOverrides, default_version, run_parsed
    from kb.preflight.inputs import InputError, ParsedInput, parse_argv, parse_text
    from kb.preflight.render import render_preflight
    from kb.versions import VersionError

    try:
        release = release_for(default_version(verl_version)[0])
    except VersionError as exc:
        fail(str(exc))
    args = list(words)
    parsed: ParsedInput
    try:
        if len(args) == 1 and (args[0] == "-" or Path(args[0]).is_file()):
            name = args[0]
            try:
                raw = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                fail(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}")
            parsed = parse_text(raw, release)
        elif len(args) == 1 and Path(args[0]).is_dir():
            from kb.preflight.inputs import find_overrides

            found = find_overrides(Path(args[0]))
            if found is None:
                fail(f"{args[0]}: no .hydra/overrides.yaml in this directory (or a few levels below it)")
            try:
                parsed = parse_text(found.read_text(encoding="utf-8"), release)
            except (OSError, UnicodeDecodeError) as exc:
                fail(f"cannot read {found}: {getattr(exc, 'strerror', None) or exc}")
            parsed.notes.insert(0, f"the overrides Hydra recorded in {found}")
        elif len(args) == 1 and "=" not in args[0] and " " not in args[0].strip():
            fail(
                f"{args[0]}: no such file (give a script, an overrides.yaml or a config.yaml, "
                "or the command after '--')"
            )
        elif args:
            parsed = parse_argv(args)
        else:
            fail("nothing to check: give the command after '--', or a FILE ('-' for stdin)")
    except InputError as exc:
        fail(str(exc))
    try:
        result = run_parsed(parsed, verl_version, nnodes, gpus_per_node)
    except NoOverrides as exc:
        fail(str(exc))
    click.echo(result.model_dump_json(indent=1) if as_json else render_preflight(result))
    bad = any(f.severity in ("error", "later") for f in result.findings)
    sys.exit(EXIT_FINDINGS if bad else EXIT_OK)
