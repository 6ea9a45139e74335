"""Config facts come only from structured sources (issue 16 item 2): launch command lines, Hydra's
"Error executing job with overrides" list, .hydra files — never from prose, warnings or Ray repr lines."""

from __future__ import annotations

import json
import shlex
from typing import Any

from kb.cli import main
from kb.loglines import split_lines
from kb.overrides import launch_overrides
from kb.signals import extract_signals
from tests.conftest import FIXTURES, REPO

RUNS = REPO / "tests" / "eval" / "verl_runs"


def _command_overrides(case: str) -> dict[str, str]:
    """What the run's own command.txt passed, read by a shell's rules, not by the code under test."""
    parts = shlex.split((RUNS / case / "command.txt").read_text())
    start = parts.index("verl.trainer.main_ppo") + 1
    return dict(tok.split("=", 1) for tok in parts[start:])


def test_transfer_queue_run_overrides_are_its_command_and_nothing_from_rays_repr_line() -> None:
    log = (RUNS / "v1_transfer_queue_missing" / "output.log").read_text()
    assert "repr=<main_ppo.TaskRunnerV1" in log  # the Ray line that used to leak ip/actor_id/repr
    signals = extract_signals(split_lines(log))
    assert signals.overrides == _command_overrides("v1_transfer_queue_missing")
    assert not {"ip", "actor_id", "repr", "pid"} & set(signals.overrides)


def test_the_saved_command_line_is_read_like_the_hydra_list() -> None:
    command = (RUNS / "v1_transfer_queue_missing" / "command.txt").read_text()
    assert extract_signals(split_lines(command)).overrides == _command_overrides("v1_transfer_queue_missing")


def test_a_warning_that_names_an_override_is_not_an_override() -> None:
    warning = (
        "/usr/local/lib/python3.12/dist-packages/verl/trainer/main_ppo.py:180: UserWarning: Disabled critic as "
        "algorithm.adv_estimator != gae. If it is not intended, please set critic.enable=True"
    )
    assert extract_signals(split_lines(warning)).overrides == {}
    prose = "you should run python -m verl.trainer.main_ppo with a bigger batch, e.g. please set critic.enable=True"
    assert extract_signals(split_lines(f"I think {prose}")).overrides == {}
    ray_repr = "ray::TaskRunner.run() (pid=1, ip=10.0.0.7, actor_id=abc, repr=<main_ppo.TaskRunner object at 0x7f>)"
    assert extract_signals(split_lines(ray_repr)).overrides == {}


def test_a_shell_script_command_is_joined_across_its_continuation_lines() -> None:
    script = (
        "set -x\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        "    algorithm.adv_estimator=grpo \\\n"
        "    data.train_batch_size=8 \\\n"
        "    actor_rollout_ref.actor.ppo_mini_batch_size=16 $@ 2>&1 | tee log.txt\n"
        "echo done=1\n"
    )
    assert launch_overrides(script.splitlines()) == [
        "algorithm.adv_estimator=grpo",
        "data.train_batch_size=8",
        "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    ]


def _match(runner: Any, tmp_path: Any, text: str, entry_id: str) -> dict[str, Any]:
    path = tmp_path / "input.log"
    path.write_text(text)
    out = runner.invoke(main, ["match", "--json", "--no-semantic", "--top", "10", str(path)])
    assert out.exit_code in (0, 1), out.output
    return next(m for m in json.loads(out.output)["matches"] if m["id"] == entry_id)


def test_the_critic_warning_of_a_grpo_run_does_not_claim_the_user_wanted_ppo(runner: Any, tmp_path: Any) -> None:
    """The GRPO fixture passes algorithm.adv_estimator=grpo on purpose: "the user wanted PPO" cannot be read
    from any fact, so the condition is unknown, not holds; and critic.enable from the warning is no fact."""
    text = (FIXTURES / "critic-disabled-non-gae" / "positive-grpo-warning.log").read_text()
    match = _match(runner, tmp_path, text, "critic-disabled-non-gae")
    assert [c["status"] for c in match["conditions"]] == ["unknown"]
    result = json.loads(runner.invoke(main, ["match", "--json", "--no-semantic", str(tmp_path / "input.log")]).output)
    assert "critic.enable" not in result["signals"]["overrides"]
    assert result["signals"]["overrides"]["algorithm.adv_estimator"] == "grpo"


def test_transfer_queue_run_through_the_cli(runner: Any, tmp_path: Any) -> None:
    text = (RUNS / "v1_transfer_queue_missing" / "output.log").read_text()
    match = _match(runner, tmp_path, text, "transfer-queue-missing")
    assert match["verdict"] == "match"
    result = json.loads(runner.invoke(main, ["match", "--json", "--no-semantic", str(tmp_path / "input.log")]).output)
    assert result["matches"][0]["id"] == "transfer-queue-missing"
    assert "repr" not in result["signals"]["overrides"]
    # The command's overrides are complete (Hydra printed them all): trainer.use_v1 was not passed.
    v1 = next(c for c in match["conditions"] if "V1 trainer was not switched off" in c["text"])
    assert v1["status"] == "holds"
