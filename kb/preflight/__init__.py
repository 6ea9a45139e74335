"""Preflight: predict verl's start-up failures from the launch command, before the job waits for GPUs.

``preflight(overrides, release)`` composes the release's defaults (``kb/data/verl_keys``) with the overrides and
runs the checks verl runs at start-up for that release (:mod:`kb.preflight.checks`); ``kb.preflight.inputs``
turns command lines, launch scripts, ``.hydra/overrides.yaml`` and ``config.yaml`` into overrides.
"""

from kb.preflight.engine import preflight, release_for
from kb.preflight.models import PreflightFinding, PreflightResult, PreflightValue

__all__ = ["PreflightFinding", "PreflightResult", "PreflightValue", "preflight", "release_for"]
