"""Preflight: parsing what a user has before launch, the composed config, verl's checks per release, the CLI."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from kb.cli import main
from kb.preflight import preflight
from kb.preflight.checks import CHECKS
from kb.preflight.compose import Composed
from kb.preflight.inputs import InputError, parse_argv, parse_text
from kb.versions import KNOWN_RELEASES
from tests.conftest import CORPUS, REPO

#: a launch verl accepts on one GPU at every release (the micro batches verl needs, a rollout engine)
BASE = [
    "data.train_files=/data/train.parquet",
    "data.val_files=/data/val.parquet",
    "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",  # a hub id: never judged as a local path
    "data.train_batch_size=8",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.name=vllm",
    "critic.ppo_micro_batch_size_per_gpu=2",
    "trainer.n_gpus_per_node=1",
    f"critic.model.path={REPO}",  # a directory that exists: from 0.8 the critic's model config is loaded from it
]


def first_error(overrides: list[str], release: str) -> str | None:
    result = preflight(overrides, release)
    return result.errors[0].check if result.errors else None


@pytest.mark.parametrize("release", KNOWN_RELEASES)
def test_a_valid_launch_starts_on_every_release(release: str) -> None:
    result = preflight(BASE, release)
    assert result.starts, [(f.check, f.message) for f in result.errors]
    assert result.release_checked == release


@pytest.mark.parametrize("release", KNOWN_RELEASES)
@pytest.mark.parametrize(
    ("extra", "check"),
    [
        (["trainer.n_gpus_per_node=3"], "real-train-batch-not-divisible"),
        (
            ["actor_rollout_ref.rollout.n=3", "trainer.nnodes=2", "trainer.n_gpus_per_node=8"],
            "real-train-batch-not-divisible",
        ),
        (["actor_rollout_ref.actor.ppo_micro_batch_size=4"], "actor-micro-batch-both-set"),
        (["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null"], "actor-micro-batch-unset"),
        (["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=null"], "rollout-log-prob-micro-batch-unset"),
        (["critic.ppo_micro_batch_size_per_gpu=null"], "critic-micro-batch-unset"),
        (["data.train_batch_size=2"], "train-batch-smaller-than-mini-batch"),
        (["actor_rollout_ref.actor.loss_agg_mode=bogus"], "loss-agg-mode-invalid"),
        (
            ["actor_rollout_ref.rollout.val_kwargs.do_sample=True", "actor_rollout_ref.rollout.temperature=0"],
            "val-do-sample-zero-temperature",
        ),
        (["data.train_batch_size=abc"], "config-value-type-error"),
        (["trainer.nnode=2"], "hydra-key-not-in-struct"),
        (["+trainer.nnodes=2"], "hydra-append-existing-key"),
        (["actor_rollout_ref.actor.optim.lr=1e-6,2e-6"], "hydra-sweep-without-multirun"),
        (["trainer.logger=[console,wandb"], "hydra-override-grammar"),
    ],
)
def test_each_violation_is_the_first_error(release: str, extra: list[str], check: str) -> None:
    assert first_error(BASE + extra, release) == check


def test_the_critic_is_checked_only_when_used() -> None:
    grpo = [*BASE, "critic.ppo_micro_batch_size_per_gpu=null", "algorithm.adv_estimator=grpo"]
    for release in KNOWN_RELEASES:
        assert preflight(grpo, release).starts, release
    # the reference model's micro batch matters only with a KL term
    no_ref = [*BASE, "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=null"]
    assert preflight(no_ref, "0.9.1").starts
    assert (
        first_error([*no_ref, "actor_rollout_ref.actor.use_kl_loss=True"], "0.9.1") == "ref-log-prob-micro-batch-unset"
    )


def test_dynamic_batching_skips_the_micro_batch_checks_and_checks_the_token_budget() -> None:
    dyn = [b for b in BASE if "micro_batch" not in b] + [
        "actor_rollout_ref.actor.use_dynamic_bsz=True",
        "critic.use_dynamic_bsz=True",
        "data.max_prompt_length=4096",
        "data.max_response_length=8192",
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192",
    ]
    result = preflight(dyn, "0.9.1")
    assert result.starts and result.fails_later
    budget = next(f for f in result.findings if f.check == "dynamic-bsz-token-budget-too-small")
    assert budget.severity == "later" and budget.stage == "training"
    assert budget.overrides[0].line == "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=12288"


def test_release_differences() -> None:
    # ray_init.num_cpus is a key of 0.4-0.5 and a Hydra error from 0.6
    assert preflight([*BASE, "ray_init.num_cpus=16"], "0.5.0").starts
    bad = preflight([*BASE, "ray_init.num_cpus=16"], "0.6.0").errors[0]
    assert bad.entry == "ray-init-num-cpus-renamed" and bad.overrides[0].line == "ray_kwargs.ray_init.num_cpus=16"
    # token-sum is a loss_agg_mode from 0.9.0
    assert first_error([*BASE, "actor_rollout_ref.actor.loss_agg_mode=token-sum"], "0.8.0") == "loss-agg-mode-invalid"
    assert preflight([*BASE, "actor_rollout_ref.actor.loss_agg_mode=token-sum"], "0.9.0").starts
    # 0.4-0.5 assert train >= mini with no message; 0.6+ say it
    assert preflight([*BASE, "data.train_batch_size=2"], "0.4.0").errors[0].message.startswith("AssertionError")
    assert (
        "must be >= actor.ppo_mini_batch_size (4)"
        in preflight([*BASE, "data.train_batch_size=2"], "0.6.0").errors[0].message
    )
    # rollout.name has no default from 0.6.0: verl starts, the rollout worker fails
    no_name = [b for b in BASE if "rollout.name" not in b]
    later = preflight(no_name, "0.9.1")
    assert later.starts and later.fails_later
    assert next(f for f in later.findings if f.severity == "later").entry == "rollout-name-missing"
    assert not preflight(no_name, "0.5.0").fails_later


def test_the_critic_model_path_is_loaded_from_0_7() -> None:
    missing = [*BASE, "critic.model.path=/nonexistent/critic"]
    assert first_error(missing, "0.7.0") == "critic-model-path-not-found"
    assert first_error(missing, "0.8.0") == "critic-model-path-not-found"
    assert preflight(missing, "0.6.1").starts  # 0.6 builds the critic's model config without opening it
    # 0.7.x: the critic's tokenizer_path defaults to the actor's model path, so a missing actor path fails there
    local_actor = [b for b in BASE if "model.path=Qwen" not in b] + ["actor_rollout_ref.model.path=/nonexistent/actor"]
    assert first_error(local_actor, "0.7.1") == "critic-model-path-not-found"
    assert preflight(local_actor, "0.8.0").starts
    assert preflight([*missing, "algorithm.adv_estimator=grpo"], "0.9.1").starts  # no critic, nothing loaded
    # where the job runs decides, not where preflight runs
    assert preflight(missing, "0.9.1", path_exists=lambda p: True).starts
    fix = preflight(missing, "0.9.1").errors[0].overrides[0]
    assert fix.line == "critic.model.path=Qwen/Qwen2.5-0.5B-Instruct"


def test_megatron_parallel_sizes() -> None:
    mega = [
        *BASE,
        "trainer.n_gpus_per_node=8",
        "actor_rollout_ref.actor.strategy=megatron",
        "critic.strategy=megatron",  # 0.4-0.5 assert the critic's strategy is the actor's
        "+actor_rollout_ref.actor.megatron.tensor_model_parallel_size=3",
        "+actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=1",
        "+actor_rollout_ref.actor.megatron.context_parallel_size=1",
    ]
    assert first_error(mega, "0.5.0") == "megatron-parallel-not-dividing-gpus"
    assert first_error([m for m in mega if not m.startswith("critic")], "0.5.0") == "strategy-unknown"
    on_fsdp = preflight([*BASE, "actor_rollout_ref.actor.strategy=megatron"], "0.9.1").errors[0]
    assert on_fsdp.check == "config-key-missing" and on_fsdp.entry == "actor-strategy-megatron-on-fsdp-config"


def test_each_value_names_where_it_came_from() -> None:
    result = preflight([*BASE, "trainer.n_gpus_per_node=3"], "0.9.1", nnodes=1)
    values = {v.key: v for v in result.errors[0].values}
    assert values["trainer.n_gpus_per_node"].source == "override"
    assert values["actor_rollout_ref.rollout.n"].source == "default"
    assert values["real_train_batch_size"].source == "derived"
    # the critic's mini batch is interpolated from the actor's: derived when the actor's is overridden
    cfg = Composed("0.9.1")
    cfg.set("actor_rollout_ref.actor.ppo_mini_batch_size", 64, "override")
    assert cfg.resolve("critic.ppo_mini_batch_size")[0] == 64
    assert cfg.source("critic.ppo_mini_batch_size")[0] == "derived"
    with_option = preflight([b for b in BASE if "n_gpus" not in b], "0.9.1", gpus_per_node=3)
    assert {v.key: v.source for v in with_option.errors[0].values}["trainer.n_gpus_per_node"] == "option"


@pytest.mark.parametrize(
    "extra",
    [
        ["trainer.n_gpus_per_node=3"],
        ["actor_rollout_ref.rollout.n=3", "trainer.nnodes=2", "trainer.n_gpus_per_node=8"],
        ["actor_rollout_ref.actor.ppo_micro_batch_size=4"],
        ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null"],
        ["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=null"],
        ["actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=null"],
        ["critic.ppo_micro_batch_size_per_gpu=null"],
        ["data.train_batch_size=2"],
        ["actor_rollout_ref.actor.loss_agg_mode=token-meen"],
        ["actor_rollout_ref.rollout.val_kwargs.do_sample=True", "actor_rollout_ref.rollout.temperature=0"],
        ["trainer.nnode=2"],
    ],
)
@pytest.mark.parametrize("release", ["0.4.0", "0.6.0", "0.9.1"])
def test_the_fix_clears_the_finding(release: str, extra: list[str]) -> None:
    """The main fix and each alternative, applied to the input, make the check pass on that release."""
    before = preflight(BASE + extra, release).errors[0]
    assert before.overrides, before.check
    for block in [before.overrides, *[a.overrides for a in before.alternatives]]:
        fixed_keys = {o.key for o in block}
        kept = [
            o for o in BASE + extra if o.lstrip("+").split("=")[0] not in fixed_keys and o not in before.values[0].value
        ]
        after = preflight(kept + [o.line.strip("'") for o in block], release)
        assert before.check not in [f.check for f in after.errors], (block, [f.message for f in after.errors])


def test_every_check_names_an_entry_that_exists_and_a_message_regex() -> None:
    ids = {p.stem for p in CORPUS.rglob("*.md") if p.name != "README.md"}
    for check in CHECKS.values():
        assert check.entry is None or check.entry in ids, check.id
        for _, regex in check.verl_message:
            re.compile(regex)


@pytest.mark.parametrize("release", KNOWN_RELEASES)
def test_the_regex_of_each_check_matches_the_message_it_predicts(release: str) -> None:
    cases = [
        ["trainer.n_gpus_per_node=3"],
        ["actor_rollout_ref.actor.ppo_micro_batch_size=4"],
        ["data.train_batch_size=2"],
        ["actor_rollout_ref.actor.loss_agg_mode=bogus"],
        ["critic.ppo_micro_batch_size_per_gpu=null"],
    ]
    for extra in cases:
        finding = preflight(BASE + extra, release).errors[0]
        regex = CHECKS[finding.check].message_regex(release)
        assert regex is not None, finding.check
        shown = "" if finding.message.endswith("(verl gives no message)") else finding.message
        assert re.search(regex, shown), (finding.check, finding.message)


# --------------------------------------------------------------------------- inputs

SCRIPT = r"""#!/bin/bash
set -x
export VLLM_ATTENTION_BACKEND=XFORMERS
BS=12
MODEL=/models/qwen
N=${GPUS:-3}
python3 -m verl.trainer.main_ppo \
    data.train_files=$HOME/data/train.parquet \
    data.train_batch_size=${BS} \
    actor_rollout_ref.model.path="$MODEL" \
    trainer.n_gpus_per_node=$N \
    trainer.project_name='$NOT_EXPANDED' \
    trainer.experiment_name=$RUN_NAME $@
"""


def test_a_script_is_read_as_a_shell_reads_it() -> None:
    parsed = parse_text(SCRIPT)
    assert parsed.kind == "script"
    assert "data.train_batch_size=12" in parsed.overrides
    assert "actor_rollout_ref.model.path=/models/qwen" in parsed.overrides
    assert "trainer.n_gpus_per_node=3" in parsed.overrides  # ${GPUS:-3}: the default
    assert "trainer.project_name=$NOT_EXPANDED" in parsed.overrides  # single quotes: no expansion
    assert parsed.placeholders == ["HOME", "RUN_NAME"]
    assert all("VLLM" not in o for o in parsed.overrides)
    result = preflight(parsed.overrides, "0.9.1", placeholders=parsed.placeholders)
    assert result.placeholders == ["HOME", "RUN_NAME"]


def test_overrides_yaml_config_yaml_and_argv() -> None:
    assert parse_text("- a.b=1\n- +c.d=x\n").overrides == ["a.b=1", "+c.d=x"]
    config = "data:\n  train_batch_size: 12\n  max_prompt_length: 512\ntrainer:\n  n_gpus_per_node: 8\n  foo: 1\n"
    parsed = parse_text(config, "0.9.1")
    assert parsed.kind == "config.yaml"
    assert parsed.overrides == ["data.train_batch_size=12", "+trainer.foo=1"]  # defaults left out
    argv = ["python", "-m", "verl.trainer.main_ppo", "data.train_batch_size=4", "trainer.nnodes=2"]
    assert parse_argv(argv).overrides == ["data.train_batch_size=4", "trainer.nnodes=2"]
    assert parse_argv(["data.train_batch_size=4"]).overrides == ["data.train_batch_size=4"]
    with pytest.raises(InputError):
        parse_text("\x00\x01binary")
    with pytest.raises(InputError):
        parse_text("name: x\nversion: 1\n")


# --------------------------------------------------------------------------- the CLI


def test_cli_exit_codes_text_and_json(runner: CliRunner, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ok = runner.invoke(
        main, ["preflight", "--verl-version", "0.9.1", "--", "python", "-m", "verl.trainer.main_ppo", *BASE]
    )
    assert ok.exit_code == 0, ok.output
    assert "verl would start" in ok.output
    bad = runner.invoke(
        main, ["preflight", "--verl-version", "0.9.1", "--json", "--", *BASE, "trainer.n_gpus_per_node=3"]
    )
    assert bad.exit_code == 1
    data = json.loads(bad.output)
    assert data["starts"] is False and data["findings"][0]["check"] == "real-train-batch-not-divisible"
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo " + " ".join(BASE) + " trainer.nnode=2\n")
    from_file = runner.invoke(main, ["preflight", "--verl-version", "0.9.1", str(script)])
    assert from_file.exit_code == 1 and "hydra-key-not-in-struct" in from_file.output
    stdin = runner.invoke(main, ["preflight", "--verl-version", "0.9.1", "-"], input="".join(f"- {b}\n" for b in BASE))
    assert stdin.exit_code == 0, stdin.output
    gpus = runner.invoke(
        main,
        ["preflight", "--verl-version", "0.9.1", "--gpus-per-node", "3", "--", *[b for b in BASE if "n_gpus" not in b]],
    )
    assert gpus.exit_code == 1 and "[option]" in gpus.output


@pytest.mark.parametrize(
    "args",
    [
        ["preflight"],
        ["preflight", "/no/such/file.sh"],
        ["preflight", "--verl-version", "banana", "--", "a.b=1"],
        ["preflight", "--nnodes", "0", "--", "a.b=1"],
    ],
)
def test_cli_usage_errors_exit_2(runner: CliRunner, args: list[str]) -> None:
    result = runner.invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_cli_output_has_no_control_bytes(runner: CliRunner) -> None:
    result = runner.invoke(main, ["preflight", "--verl-version", "0.9.1", "--", *BASE, "trainer.nnode=\x1b[31mred"])
    assert "\x1b" not in result.output


@pytest.mark.parametrize(
    ("release", "check"), [("0.5.0", "legacy-mini-batch-per-rank"), ("0.9.1", "engine-mini-batch-per-rank")]
)
def test_the_mini_batch_per_rank_fails_after_start_up(release: str, check: str) -> None:
    """verl's validation lets a mini batch through that its workers cannot split per rank; preflight says so as a
    finding after start-up (verl would still start), with a mini batch that splits."""
    launch = [
        *BASE,
        "trainer.n_gpus_per_node=4",
        "data.train_batch_size=16",
        "actor_rollout_ref.actor.ppo_mini_batch_size=6",
    ]
    result = preflight(launch, release)
    assert result.starts and result.fails_later
    finding = next(f for f in result.findings if f.check == check)
    assert finding.severity == "later"
    fixed = preflight([*launch, finding.overrides[0].line], release)
    assert check not in [f.check for f in fixed.findings]


def test_config_group_choices_swap_in_the_megatron_sections() -> None:
    mega = [*BASE, "trainer.n_gpus_per_node=8", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=3"]
    switched = preflight([*mega, "model_engine=megatron"], "0.9.1")
    assert switched.errors[0].check == "megatron-parallel-not-dividing-gpus"
    # without the choice the FSDP config has no megatron section: Hydra refuses the key
    assert preflight(mega, "0.9.1").errors[0].check == "hydra-key-not-in-struct"
    groups = [
        "actor@actor_rollout_ref.actor=megatron_actor",
        "ref@actor_rollout_ref.ref=megatron_ref",
        "critic=megatron_critic",
    ]
    assert preflight([*mega, *groups], "0.6.0").errors[0].check == "megatron-parallel-not-dividing-gpus"
    ok = [m.replace("size=3", "size=2") for m in mega]
    assert preflight([*ok, *groups], "0.6.0").starts
    # critic@critic names no defaults entry (its package is the group's own): Hydra refuses it
    refused = preflight([*ok, *groups[:2], "critic@critic=megatron_critic"], "0.5.0").errors[0]
    assert refused.check == "hydra-key-not-in-struct" and "Did you mean to override critic?" in refused.message
    assert refused.overrides[0].line == "critic=megatron_critic"


def test_cli_takes_a_job_directory(runner: CliRunner, tmp_path) -> None:  # type: ignore[no-untyped-def]
    hydra = tmp_path / "outputs" / "2026-12-01" / "10-00-00" / ".hydra"
    hydra.mkdir(parents=True)
    (hydra / "overrides.yaml").write_text("".join(f"- {b}\n" for b in [*BASE, "trainer.n_gpus_per_node=3"]))
    result = runner.invoke(main, ["preflight", "--verl-version", "0.9.1", str(tmp_path)])
    assert result.exit_code == 1 and "real-train-batch-not-divisible" in result.output
    assert "overrides.yaml" in result.output
    (tmp_path / "empty").mkdir()
    assert runner.invoke(main, ["preflight", str(tmp_path / "empty")]).exit_code == 2


def test_model_engine_megatron_is_an_option_from_0_8() -> None:
    refused = preflight([*BASE, "model_engine=megatron"], "0.7.1").errors[0]
    assert refused.check == "hydra-group-option-missing" and "Could not find 'model_engine/megatron'" in refused.message
    assert preflight([*BASE, "model_engine=megatron"], "0.8.0").starts


def test_cli_fix_lines_carry_no_shell_comment(runner: CliRunner) -> None:
    """A fix line is pasted into a command line: a trailing `# ...` would comment out every argument after it."""
    import shlex

    bad = runner.invoke(main, ["preflight", "--verl-version", "0.9.1", "--", *BASE, "trainer.n_gpus_per_node=3"])
    assert bad.exit_code == 1
    lines = bad.output.splitlines()
    fix = lines[lines.index("      fix:") + 1].strip()
    assert "#" not in fix and len(shlex.split(fix)) == 1 and "=" in fix, fix
    assert any(line.strip().startswith("(") and "=" in line for line in lines), bad.output
