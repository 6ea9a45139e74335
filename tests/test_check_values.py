"""`check-overrides` checks values: the enum values verl validates per release, Hydra's list syntax, and types."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from kb.cli import main
from kb.overrides import check_overrides
from kb.valuecheck import value_rules
from kb.versions import KNOWN_RELEASES

VERL_MIRROR = Path("/work/.mirror/verl-project+verl/repo")


def _one(version: str, override: str) -> dict:
    return check_overrides([override], version).verdicts[0].model_dump()


@pytest.mark.parametrize(
    ("version", "override", "status", "suggestion"),
    [
        # rollout.mode=sync: accepted through 0.6.1, RolloutConfig.__post_init__ raises from 0.7.0 on
        ("0.5.0", "actor_rollout_ref.rollout.mode=sync", "ok", None),
        ("0.6.1", "actor_rollout_ref.rollout.mode=sync", "ok", None),
        ("0.7.0", "actor_rollout_ref.rollout.mode=sync", "bad_value", "actor_rollout_ref.rollout.mode=async"),
        ("0.9.1", "actor_rollout_ref.rollout.mode=sync", "bad_value", "actor_rollout_ref.rollout.mode=async"),
        ("0.7.1", "actor_rollout_ref.rollout.mode=async", "ok", None),
        # loss_agg_mode: token-sum arrives in 0.9.0
        ("0.8.0", "actor_rollout_ref.actor.loss_agg_mode=token-sum", "bad_value", None),
        ("0.9.0", "actor_rollout_ref.actor.loss_agg_mode=token-sum", "ok", None),
        (
            "0.7.0",
            "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sums",
            "bad_value",
            "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum",
        ),
        # adv_estimator: gdpo from 0.7.1, a typo gets its close match
        ("0.7.0", "algorithm.adv_estimator=gdpo", "bad_value", None),
        ("0.7.1", "algorithm.adv_estimator=gdpo", "ok", None),
        ("0.4.0", "algorithm.adv_estimator=grpoo", "bad_value", "algorithm.adv_estimator=grpo"),
        ("0.4.0", "algorithm.adv_estimator=gpg", "bad_value", None),
        ("0.5.0", "algorithm.adv_estimator=gpg", "ok", None),
        # rollout name: hf until 0.5.0, trtllm from 0.7.1
        ("0.5.0", "actor_rollout_ref.rollout.name=hf", "ok", None),
        ("0.6.0", "actor_rollout_ref.rollout.name=hf", "bad_value", "actor_rollout_ref.rollout.name=vllm"),
        ("0.7.0", "actor_rollout_ref.rollout.name=trtllm", "bad_value", None),
        ("0.7.1", "actor_rollout_ref.rollout.name=trtllm", "ok", None),
        ("0.9.1", "actor_rollout_ref.rollout.name=sglang", "ok", None),
        ("0.9.1", "actor_rollout_ref.rollout.name=vlm", "bad_value", "actor_rollout_ref.rollout.name=vllm"),
        # logger backends: file and trackio from 0.6.0
        ("0.5.0", "trainer.logger=[console,file]", "bad_value", "'trainer.logger=[console]'"),
        ("0.6.0", "trainer.logger=[console,file]", "ok", None),
        ("0.9.1", "trainer.logger=[console,wandbb]", "bad_value", "'trainer.logger=[console,wandb]'"),
        ("0.9.1", "trainer.logger=[console,tracking]", "deprecated", None),
        # policy loss modes
        ("0.6.0", "actor_rollout_ref.actor.policy_loss.loss_mode=gspo", "ok", None),
        ("0.5.0", "actor_rollout_ref.actor.policy_loss.loss_mode=gspo", "bad_value", None),
        ("0.7.0", "actor_rollout_ref.actor.policy_loss.loss_mode=cispo", "ok", None),
        # kl: 'k3+' (straight-through) from 0.6.0; 'full' always raises
        ("0.5.0", "algorithm.kl_penalty=k3+", "bad_value", None),
        ("0.6.0", "algorithm.kl_penalty=k3+", "ok", None),
        ("0.9.1", "actor_rollout_ref.actor.kl_loss_type=full", "bad_value", None),
        ("0.9.1", "actor_rollout_ref.actor.kl_loss_type=low_var_kl", "ok", None),
        # Hydra lists and sweeps
        ("0.9.1", "trainer.logger=console,wandb", "bad_value", "'trainer.logger=[console,wandb]'"),
        ("0.9.1", "trainer.logger='[console,wandb]'", "bad_value", "'trainer.logger=[console,wandb]'"),
        ("0.9.1", "trainer.logger=[console,wandb]", "ok", None),
        ("0.9.1", "trainer.logger=console", "ok", None),
        ("0.9.1", "data.train_batch_size=[1", "bad_value", None),
        # types
        ("0.9.1", "data.train_batch_size=abc", "bad_value", None),
        ("0.9.1", "data.train_batch_size=256", "ok", None),
        ("0.9.1", "actor_rollout_ref.actor.use_dynamic_bsz=maybe", "bad_value", None),
        ("0.9.1", "actor_rollout_ref.actor.use_dynamic_bsz=true", "ok", None),
        ("0.9.1", "actor_rollout_ref.actor.optim.lr=1e-6", "ok", None),
        ("0.9.1", "actor_rollout_ref.actor.optim.lr=fast", "bad_value", None),
        ("0.9.1", "algorithm.adv_estimator=${oc.env:EST}", "ok", None),
    ],
)
def test_values_per_release(version, override, status, suggestion):
    v = _one(version, override)
    assert v["status"] == status, v["message"]
    assert v["fails"] is (status == "bad_value")
    if suggestion is not None:
        assert v["suggestion"] == suggestion


def test_a_verdict_says_what_verl_does_and_where():
    v = _one("0.7.0", "actor_rollout_ref.rollout.mode=sync")
    assert "Rollout mode 'sync' has been removed" in v["message"]
    assert "at start-up" in v["message"]
    assert "verl/workers/config/rollout.py:226 at v0.7.0" in v["message"]
    v = _one("0.9.1", "algorithm.adv_estimator=grpoo")
    assert "Unknown advantage estimator simply: grpoo" in v["message"]
    assert "first training step" in v["message"]
    assert "v0.9.0" in v["message"]  # 0.9.1 has no tag: the rule is v0.9.0's


def test_suggestions_are_rendered_override_lines():
    """Every suggested line survives a shell split as one word and Hydra's grammar reads it back."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    report = check_overrides(
        ["trainer.logger=console,wandb", "trainer.logger=[console,wandbb]", "actor_rollout_ref.rollout.mode=sync"],
        "0.9.1",
    )
    for v in report.verdicts:
        assert v.suggestion
        words = shlex.split(v.suggestion)
        assert len(words) == 1
        assert not parser.parse_override(words[0]).is_sweep_override()


def test_cli_exit_and_json(runner):
    result = runner.invoke(
        main, ["check-overrides", "--json", "--verl-version", "0.7.0", "--", "actor_rollout_ref.rollout.mode=sync"]
    )
    assert result.exit_code == 1
    verdict = json.loads(result.output)["verdicts"][0]
    assert verdict["status"] == "bad_value"
    assert verdict["suggestion"] == "actor_rollout_ref.rollout.mode=async"
    result = runner.invoke(
        main, ["check-overrides", "--verl-version", "0.6.1", "--", "actor_rollout_ref.rollout.mode=sync"]
    )
    assert result.exit_code == 0


def test_every_rule_cites_a_file_and_line_of_its_tag():
    rules = value_rules()
    assert set(rules) >= {"trainer.logger", "algorithm.adv_estimator", "actor_rollout_ref.rollout.mode"}
    for key, per in rules.items():
        for release, rule in per.items():
            assert release in KNOWN_RELEASES
            path, _, line = rule["source"].rpartition(":")
            assert path.startswith("verl/") and int(line) > 0, (key, release)
            assert rule["tag"].startswith("v") and rule["values"], (key, release)


@pytest.mark.skipif(not VERL_MIRROR.exists(), reason="no local git snapshot of verl")
def test_cited_lines_are_verl_checks():
    """The cited line at each tag is the raise/assert the rule describes (against the local verl snapshot)."""
    for key, per in value_rules().items():
        for release, rule in per.items():
            path, _, line = rule["source"].rpartition(":")
            text = subprocess.run(
                ["git", "-C", str(VERL_MIRROR), "show", f"{rule['tag']}:{path}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.splitlines()[int(line) - 1]
            assert "raise" in text or "assert" in text, (key, release, text)
