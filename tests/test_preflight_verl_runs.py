"""Preflight against the real CPU runs of verl 0.9.1 (tests/eval/verl_runs): every run that verl refused before Ray
started because of its config is predicted from its command.txt alone, with the corpus entry the eval expects
for that run (tests/eval/cases); every run that got past config validation passes preflight."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from kb.preflight import preflight
from kb.preflight.inputs import parse_argv
from tests.conftest import REPO

RUNS = REPO / "tests" / "eval" / "verl_runs"
CASES = REPO / "tests" / "eval" / "cases"
#: Ray's own start-up lines: a run that printed one got past verl's config validation
_RAY_STARTED = re.compile(r"Started a local Ray instance|ray init kwargs")
#: runs that stopped before Ray for a reason outside the config, each with why preflight cannot know it
NOT_CONFIG = {
    "legacy_trainer_missing_cachetools": "a package of verl's extra is not installed in the driver's environment",
    "model_path_missing": "the model directory does not exist on the machine that ran it",
    "vllm_not_installed_lora": "validation imports vLLM for the LoRA rank check; vLLM is not installed there",
}


def _expected() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted(CASES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            m = re.fullmatch(r"tests/eval/verl_runs/([^/]+)/output\.log", case.get("input_file", ""))
            if m:
                out.setdefault(m.group(1), []).extend(case["expected"])
    return out


def _runs() -> list[Path]:
    return sorted(
        p for p in RUNS.iterdir() if (p / "command.txt").is_file() and "main_ppo" in (p / "command.txt").read_text()
    )


def _existed_there(path: str) -> bool:
    """The runs' inputs existed on the machine that ran them (make_inputs.py wrote them under
    /tmp/verl_runs_scratch/inputs); a /nonexistent/ path did not. This machine's /tmp says nothing about that."""
    return path.startswith("/tmp/verl_runs_scratch/inputs/") and "does_not_exist" not in path


def _check(run: Path):  # type: ignore[no-untyped-def]
    words = shlex.split((run / "command.txt").read_text(encoding="utf-8"))
    parsed = parse_argv(words)
    return preflight(parsed.overrides, "0.9.1", path_exists=_existed_there)


def _refused_at_config(run: Path) -> bool:
    log = (run / "output.log").read_text(encoding="utf-8", errors="replace")
    return (run / "exit_code.txt").read_text().strip() != "0" and not _RAY_STARTED.search(log)


CONFIG_RUNS = [r for r in _runs() if _refused_at_config(r) and r.name not in NOT_CONFIG]
STARTED_RUNS = [r for r in _runs() if not _refused_at_config(r)]


def test_the_runs_are_there() -> None:
    assert len(CONFIG_RUNS) >= 25 and len(STARTED_RUNS) >= 10
    for name in NOT_CONFIG:  # the exclusions are runs that really stopped before Ray
        assert _refused_at_config(RUNS / name), name


@pytest.mark.parametrize("run", CONFIG_RUNS, ids=lambda p: p.name)
def test_a_config_failure_is_predicted_with_the_expected_entry(run: Path) -> None:
    result = _check(run)
    assert not result.starts, f"{run.name}: preflight says verl starts"
    first = result.errors[0]
    expected = _expected()[run.name]
    assert first.entry in expected, f"{run.name}: {first.check} names {first.entry}, the eval expects {expected}"
    # the message preflight predicts is the one verl printed
    log = (run / "output.log").read_text(encoding="utf-8", errors="replace")
    probe = first.message.splitlines()[0][:60] if first.message else ""
    assert probe and probe.split("(")[0].strip() in log, f"{run.name}: {probe!r} is not in the log"


@pytest.mark.parametrize("run", STARTED_RUNS, ids=lambda p: p.name)
def test_a_run_that_got_past_validation_passes_preflight(run: Path) -> None:
    result = _check(run)
    assert result.starts, f"{run.name}: {[(f.check, f.message) for f in result.errors]}"


def test_the_lora_run_is_named_as_a_warning() -> None:
    result = _check(RUNS / "vllm_not_installed_lora")
    assert any(f.check == "lora-vllm-import" and f.entry == "vllm-not-installed" for f in result.findings)
