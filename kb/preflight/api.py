"""One call for every surface: the user's text (command, script, overrides.yaml, config.yaml) to a result."""

from __future__ import annotations

from kb.preflight.engine import preflight, release_for
from kb.preflight.inputs import ParsedInput, parse_text
from kb.preflight.models import PreflightResult


class NoOverrides(ValueError):
    """The input has no overrides to check."""


def installed_verl() -> str | None:
    """The installed verl's version from its metadata, without importing verl (which imports torch and Ray)."""
    from importlib import metadata

    try:
        return metadata.version("verl")
    except metadata.PackageNotFoundError:
        return None


def default_version(verl_version: str | None) -> tuple[str | None, str]:
    """(version, where it came from): the one asked for, the installed verl's, or None for the newest known."""
    if verl_version is not None:
        return verl_version, "option"
    installed = installed_verl()
    return (installed, "installed") if installed else (None, "newest")


def run_parsed(
    parsed: ParsedInput, verl_version: str | None, nnodes: int | None = None, gpus_per_node: int | None = None
) -> PreflightResult:
    if not parsed.overrides:
        raise NoOverrides(
            "no overrides found in the input (a launch command runs python -m verl.trainer.main_ppo k=v ...)"
        )
    version, source = default_version(verl_version)
    return preflight(
        parsed.overrides,
        version,
        nnodes=nnodes,
        gpus_per_node=gpus_per_node,
        placeholders=parsed.placeholders,
        notes=parsed.notes,
        version_source=source,
    )


def preflight_text(
    text: str, verl_version: str | None = None, nnodes: int | None = None, gpus_per_node: int | None = None
) -> PreflightResult:
    """Raises kb.preflight.inputs.InputError, NoOverrides or kb.versions.VersionError on bad input."""
    version, _ = default_version(verl_version)
    parsed = parse_text(text, release_for(version))
    return run_parsed(parsed, verl_version, nnodes, gpus_per_node)
