"""`check-overrides`: renames across 0.4 to 0.9, the '+' rule, ignored keys, and the input forms users have."""

from __future__ import annotations

import json

import pytest

from kb.cli import main
from kb.overrides import check_overrides, extract_overrides, render_override


def _verdicts(runner, *args: str) -> tuple[int, list[dict]]:
    result = runner.invoke(main, ["check-overrides", "--json", *args])
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.output)["verdicts"]


def test_the_four_classic_mistakes_on_091(runner):
    code, v = _verdicts(
        runner,
        "--verl-version",
        "0.9.1",
        "--",
        "ray_init.num_cpus=16",
        "trainer.nnode=2",
        "data.cache_dir=/x",
        "actor_rollout_ref.actor.use_torch_compile=False",
    )
    assert code == 1
    assert [x["status"] for x in v] == ["ignored", "unknown", "needs_plus", "ignored"]
    assert [x["suggestion"] for x in v] == [
        "ray_kwargs.ray_init.num_cpus=16",
        "trainer.nnodes=2",
        "+data.cache_dir=/x",
        "actor_rollout_ref.actor.fsdp_config.use_torch_compile=False",
    ]
    assert "Could not override 'ray_init.num_cpus'" in v[0]["message"]


@pytest.mark.parametrize(
    ("version", "override", "status", "suggestion"),
    [
        ("0.4.0", "ray_init.num_cpus=16", "ok", None),
        ("0.5.0", "ray_init.num_cpus=16", "ok", None),
        ("0.6.0", "ray_init.num_cpus=16", "ignored", "ray_kwargs.ray_init.num_cpus=16"),
        ("0.5.0", "ray_kwargs.ray_init.num_cpus=16", "unknown", "ray_init.num_cpus=16"),
        ("0.6.1", "+ray_init.num_cpus=16", "ignored", "ray_kwargs.ray_init.num_cpus=16"),
        ("0.4.1", "ray_init.timeline_json_file=/tmp/t.json", "ok", None),
        ("0.7.0", "ray_init.timeline_json_file=/tmp/t.json", "ignored", "ray_kwargs.timeline_json_file=/tmp/t.json"),
        (
            "0.7.0",
            "ray_kwargs.ray_init.timeline_json_file=/tmp/t.json",
            "unknown",
            "ray_kwargs.timeline_json_file=/tmp/t.json",
        ),
        ("0.7.1", "critic.model.fsdp_config.param_offload=True", "ok", None),
        ("0.8.0", "critic.model.fsdp_config.param_offload=True", "unknown", "critic.fsdp.param_offload=True"),
        ("0.7.1", "actor_rollout_ref.actor.use_torch_compile=False", "ok", None),
        (
            "0.8.0",
            "actor_rollout_ref.actor.use_torch_compile=False",
            "ignored",
            "actor_rollout_ref.actor.fsdp_config.use_torch_compile=False",
        ),
        ("0.8.0", "reward_model.enable=True", "ok", None),
        ("0.9.0", "reward_model.enable=True", "ignored", "reward.reward_model.enable=True"),
        ("0.9.1", "custom_reward_function.path=/r.py", "ignored", "reward.custom_reward_function.path=/r.py"),
        ("0.7.0", "reward.reward_manager.name=dapo", "unknown", "reward_model.reward_manager=dapo"),
        ("0.6.0", "actor_rollout_ref.rollout.update_weights_bucket_megabytes=1024", "ok", None),
        (
            "0.7.1",
            "actor_rollout_ref.rollout.update_weights_bucket_megabytes=1024",
            "unknown",
            "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=1024",
        ),
        (
            "0.6.0",
            "actor_rollout_ref.actor.optim.warmup_style=cosine",
            "deprecated",
            "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine",
        ),
        ("0.4.0", "trainer.wandb_proxy=http://p:8080", "needs_plus", "+trainer.wandb_proxy=http://p:8080"),
        ("0.9.1", "+trainer.wandb_proxy=http://p:8080", "ok", None),
        ("0.9.1", "+trainer.val_before_train=False", "remove_plus", "trainer.val_before_train=False"),
        ("0.9.1", "++trainer.val_before_train=False", "ok", None),
        ("0.4.0", "+actor_rollout_ref.rollout.engine_kwargs.vllm.disable_cascade_attn=True", "ok", None),
        (
            "0.9.1",
            "actor_rollout_ref.rollout.engine_kwargs.vllm.disable_cascade_attn=True",
            "needs_plus",
            "+actor_rollout_ref.rollout.engine_kwargs.vllm.disable_cascade_attn=True",
        ),
        ("0.9.1", "data.train_batch_size=abc", "bad_value", None),
        ("0.9.1", "+lr_scheduler.warmup_ratio=0.03", "ignored", None),
        ("0.9.1", "rollout.name=vllm", "unknown", "actor_rollout_ref.rollout.name=vllm"),
    ],
)
def test_renames_and_prefixes_across_releases(version, override, status, suggestion):
    verdict = check_overrides([override], version).verdicts[0]
    assert verdict.status == status, verdict.message
    assert verdict.suggestion == suggestion
    assert verdict.fails == (status not in ("ok", "deprecated"))


def test_unreleased_version_uses_nearest_key_set():
    report = check_overrides(["trainer.nnodes=2"], "0.10.0.dev0")
    assert report.release_checked == "0.9.1"
    assert not report.failed


def test_reads_hydra_overrides_yaml_and_command_lines(runner, tmp_path):
    hydra = tmp_path / "overrides.yaml"
    hydra.write_text("- algorithm.adv_estimator=grpo\n- trainer.nnode=2\n- +data.cache_dir=/tmp/c\n")
    code, v = _verdicts(runner, "--file", str(hydra))
    assert code == 1 and [x["status"] for x in v] == ["ok", "unknown", "ok"]

    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\nset -x\nVLLM_USE_V1=1 python3 -m verl.trainer.main_ppo \\\n"
        "    algorithm.adv_estimator=grpo \\\n    data.train_batch_size=256 \\\n"
        '    trainer.logger=\'["console","wandb"]\' \\\n    ray_init.num_cpus=8 $@\n'
    )
    code, v = _verdicts(runner, "--verl-version", "0.6.1", "--file", str(script))
    assert [x["text"] for x in v] == [
        "algorithm.adv_estimator=grpo",
        "data.train_batch_size=256",
        'trainer.logger=["console","wandb"]',
        "ray_init.num_cpus=8",
    ]
    assert code == 1 and v[-1]["status"] == "ignored"

    code, v = _verdicts(runner, "--", "python -m verl.trainer.main_ppo trainer.nnodes=2 trainer.n_gpus_per_node=8")
    assert code == 0 and len(v) == 2


def test_extract_skips_env_assignments_before_entry_point():
    assert extract_overrides("HYDRA_FULL_ERROR=1 python3 -m verl.trainer.main_ppo a.b=1") == ["a.b=1"]


def test_render_override_adds_plus_only_where_needed():
    assert render_override("data.cache_dir", "/tmp/c", "0.9.1") == "+data.cache_dir=/tmp/c"
    assert render_override("trainer.nnodes", 2, "0.4.0") == "trainer.nnodes=2"
    assert render_override("actor_rollout_ref.actor.use_torch_compile", False, "0.7.0") == (
        "actor_rollout_ref.actor.use_torch_compile=False"
    )


def test_bad_input_is_a_clear_usage_error(runner, tmp_path):
    result = runner.invoke(main, ["check-overrides"])
    assert result.exit_code == 2 and "no overrides given" in result.output
    result = runner.invoke(main, ["check-overrides", "--file", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "cannot read" in result.output
    result = runner.invoke(main, ["check-overrides", "--verl-version", "banana", "--", "a=1"])
    assert result.exit_code == 2 and "not a version number" in result.output
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00garbage")
    result = runner.invoke(main, ["check-overrides", "--file", str(tmp_path / "bin.yaml")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    _, v = _verdicts(runner, "--", "=oops")
    assert v[0]["status"] == "malformed"


@pytest.mark.parametrize("version", ["0.4.1", "0.6.1", "0.9.1"])
def test_megatron_keys_are_checked_against_megatron_s_config(version):
    """A Megatron job's parallelism key is right with --config-name=ppo_megatron_trainer, refused with
    ppo_trainer (with the config to use, not FSDP's did-you-mean of a rollout key), and told apart when the
    config is not known; an FSDP-only key in a Megatron launch is refused with Megatron's own key."""
    key = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"
    megatron = check_overrides([key], version, "ppo_megatron_trainer")
    assert megatron.config == "ppo_megatron_trainer" and megatron.verdicts[0].status == "ok"
    fsdp = check_overrides([key], version, "ppo_trainer").verdicts[0]
    assert fsdp.fails and fsdp.suggestion is None and "--config-name=ppo_megatron_trainer" in fsdp.message
    unknown = check_overrides([key], version).verdicts[0]
    assert unknown.status == "other_config" and not unknown.fails and unknown.suggestion is None
    # a key neither config has is refused as before, whatever the config
    assert check_overrides(["actor_rollout_ref.actor.megatron.no_such_key=1"], version).verdicts[0].fails
    fsdp_key = "actor_rollout_ref.actor.fsdp_config.param_offload=True"
    offload = check_overrides([fsdp_key], version, "ppo_megatron_trainer")
    assert offload.verdicts[0].fails
    assert offload.verdicts[0].suggestion == "actor_rollout_ref.actor.megatron.param_offload=True"


def test_check_overrides_reads_the_config_name_of_a_launch_command(runner, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(
        "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\\n"
        "    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 trainer.nnodes=1\n"
    )
    result = runner.invoke(main, ["check-overrides", "--verl-version", "0.8.0", "--file", str(script), "--json"])
    report = json.loads(result.output)
    assert result.exit_code == 0 and report["config"] == "ppo_megatron_trainer"
    assert [v["status"] for v in report["verdicts"]] == ["ok", "ok"]
    command = (
        "python3 -m verl.trainer.main_ppo --config-name ppo_trainer "
        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2"
    )
    spaced = runner.invoke(main, ["check-overrides", "--verl-version", "0.8.0", "--", command])
    assert spaced.exit_code == 1 and "ppo_trainer config" in spaced.output and "Megatron trainer" in spaced.output
