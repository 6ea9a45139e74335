"""Job-wide facts and checks: versions, GPUs and overrides gathered once, the job's overrides checked,
and the run's metric series merged over its files (``Diagnoser.diagnose_metrics`` scores them)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kb.loglines import split_lines
from kb.overrides import OverrideReport, check_overrides, extract_overrides, parse_override
from kb.scan.files import Job
from kb.scan.report import JobFacts
from kb.signals import MetricPoint, Signals, extract_signals
from kb.versions import VersionError

if TYPE_CHECKING:
    from kb.engine import Diagnoser

#: How many bytes of a small side file (overrides.yaml, wandb metadata) are read.
SIDE_FILE_LIMIT = 1024 * 1024


def watched_metrics(diagnoser: Diagnoser) -> frozenset[str]:
    """Every metric name some corpus entry has a signature for."""
    names: set[str] = set()
    for entry in diagnoser.corpus.entries:
        for sig in entry.meta.metrics:
            names.update(sig.names)
    return frozenset(names)


def _read_small(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            return fh.read(SIDE_FILE_LIMIT).decode("utf-8", "replace")
    except OSError:
        return None


def gather_facts(job: Job, env_lines: Iterable[str]) -> tuple[Signals, JobFacts, list[str]]:
    """The job's facts as engine :class:`Signals` (for conditions and overrides) and as a report model.

    Overrides come from ``.hydra/overrides.yaml`` when there is one (the best record), else from the
    printed command line or Hydra's "Error executing job with overrides" line. Returns the raw override
    texts too, for ``check-overrides``.
    """
    lines = list(env_lines)
    override_texts: list[str] = []
    source: str | None = None
    for f in job.files:
        if f.kind == "hydra_overrides" and f.compression is None:
            text = _read_small(f.path)
            if text is not None:
                found = extract_overrides(text)
                if found and not override_texts:
                    override_texts, source = found, f.rel
        elif f.kind == "wandb_metadata" and f.compression is None:
            lines += _wandb_lines(_read_small(f.path))
        elif f.kind == "ckpt_tracker":
            text = _read_small(f.path)
            if text and text.strip().isdigit():
                lines.append(f"latest_checkpointed_iteration {text.strip()}")
    signals = extract_signals(split_lines("\n".join(_pip_style(ln) for ln in lines)))
    if not override_texts:
        override_texts = _printed_overrides(lines)
        if override_texts:
            source = "the printed command line"
    if override_texts:
        signals.overrides = {}
        for item in override_texts:
            parsed = parse_override(item)
            if parsed is not None and parsed.value is not None:
                signals.overrides[parsed.key] = parsed.value.strip("'\"")
    latest = None
    for ln in lines:
        if ln.startswith("latest_checkpointed_iteration "):
            latest = int(ln.split()[1])
    facts = JobFacts(
        versions=dict(signals.versions),
        gpus=list(signals.gpus),
        platform=signals.platform,
        env=list(signals.env),
        overrides=dict(signals.overrides),
        overrides_source=source,
        checkpoint_steps=list(job.checkpoint_steps),
        latest_checkpoint=latest,
    )
    signals.metrics = {}
    signals.exceptions, signals.frames, signals.hydra = [], [], []
    return signals, facts, override_texts


_PIP_LIST = re.compile(r"^([A-Za-z][\w.-]*)\s+v?(\d+\.\d+[\w.+-]*)$")


def _pip_style(line: str) -> str:
    """``verl    0.9.1`` (pip list) as ``verl==0.9.1``, which the version signals read for every package."""
    m = _PIP_LIST.match(line.strip())
    return f"{m.group(1)}=={m.group(2)}" if m else line


def _printed_overrides(lines: list[str]) -> list[str]:
    for ln in lines:
        if "Error executing job with overrides:" in ln:
            from kb.signals import _hydra_overrides

            found = _hydra_overrides(ln.split("Error executing job with overrides:", 1)[1].strip())
            if found:
                return found
    for ln in lines:
        # The launch command, not a Ray log line that names the module (module_name=verl.trainer.main_ppo).
        if _LAUNCH.search(ln):
            found = extract_overrides(ln)
            if found:
                return found
    return []


_LAUNCH = re.compile(r"(?:^|[\s/])python[\d.]*\s+(?:-\S+\s+)*(?:-m\s+)?\S*main_(?:ppo|generation)\b")


def _wandb_lines(text: str | None) -> list[str]:
    if not text:
        return []
    try:
        meta = json.loads(text)
    except ValueError:
        return []
    if not isinstance(meta, dict):
        return []
    out = []
    if isinstance(meta.get("gpu"), str):
        out.append(f"GPU 0: {meta['gpu']}")
    if isinstance(meta.get("python"), str):
        out.append(f"Python {meta['python']}")
    if isinstance(meta.get("os"), str):
        out.append(meta["os"])
    args = meta.get("args")
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        out.append("python3 -m verl.trainer.main_ppo " + " ".join(args))
    return out


def check_job_overrides(texts: list[str], facts: JobFacts) -> OverrideReport | None:
    if not texts:
        return None
    try:
        return check_overrides(texts, facts.versions.get("verl"))
    except VersionError:
        return check_overrides(texts, None)


def merge_series(
    per_file: list[tuple[str, dict[str, list[tuple[int, float, int]]]]],
) -> tuple[dict[str, list[MetricPoint]], dict[str, str]]:
    """One series per metric over all files (console lines and file-logger JSONL both report a step
    once; the first file that reports a step wins). Returns the series and the file each came from."""
    series: dict[str, dict[int, MetricPoint]] = {}
    origin: dict[str, str] = {}
    for rel, metrics in per_file:
        for key, points in metrics.items():
            target = series.setdefault(key, {})
            origin.setdefault(key, rel)
            for step, value, line in points:
                if step not in target:
                    target[step] = MetricPoint(step, value, line)
    return {k: sorted(v.values(), key=lambda p: p.step) for k, v in series.items()}, origin
