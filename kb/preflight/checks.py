"""The checks verl runs at start-up, per release, written from verl's source at each release tag.

Each step below is verl's own code path, ported: the same reads in the same order with the same Python
arithmetic on the composed values, so a string where verl multiplies raises the TypeError verl raises, and a key
the config lacks raises the struct error OmegaConf raises. A step ends in a :class:`Violation` (verl's check
fails) or returns. verl stops at its first failure; preflight runs every step so that the user sees every
problem, and keeps them in verl's order, so the first error is the one verl would raise.

Sources (``git show <tag>:<path>`` in verl's repository):

- 0.4.0-0.5.0: ``verl/trainer/ppo/ray_trainer.py`` ``RayPPOTrainer.__init__`` and ``_validate_config``
  (called while the trainer is built, inside the TaskRunner);
- 0.6.0-0.9.x: ``verl/utils/config.py`` ``validate_config`` (0.6-0.8 in ``TaskRunner.run``, 0.9 in ``main``
  before Ray starts), with ``verl/workers/config/actor.py`` / ``critic.py`` (``__post_init__`` when the config is
  instantiated, then ``validate``) and ``verl/trainer/ppo/utils.py`` (``need_critic``,
  ``need_reference_policy``); 0.9.1 has no tag and is the 0.9.0 code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kb.preflight.compose import MISSING, Composed, Missing, Unknown
from kb.versions import in_range


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    entry: str | None
    stage: str = "validate"
    severity: str = "error"
    #: release range -> the regex of the message verl raises there
    verl_message: tuple[tuple[str, str], ...] = ()
    source: tuple[tuple[str, str], ...] = ()

    def message_regex(self, release: str) -> str | None:
        for spec, regex in self.verl_message:
            if in_range(release, spec):
                return regex
        return None

    def source_at(self, release: str) -> str | None:
        for spec, where in self.source:
            if in_range(release, spec):
                return where
        return None


@dataclass
class Fix:
    title: str
    #: (key, value or fixexpr expression over the job's numbers, is an expression)
    lines: list[tuple[str, Any, bool]]


@dataclass
class Violation(Exception):
    check: str
    message: str
    exception: str = "ValueError"
    explanation: str = ""
    fixes: list[Fix] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)


class DictConfig(dict):
    """A section read where verl expects a value; named as OmegaConf's class so verl's TypeError reads alike."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


class Skip(Exception):
    """A value the step needs is unknown: the step is not evaluated."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class Ctx:
    """The composed config as verl's code reads it; records every key a step reads."""

    def __init__(self, cfg: Composed) -> None:
        self.cfg = cfg
        self.release = cfg.release
        self.read: list[str] = []
        self.derived: dict[str, tuple[Any, str]] = {}

    def at(self, spec: str) -> bool:
        return in_range(self.release, spec)

    def get(self, key: str) -> Any:
        """``config.a.b.c``: struct errors and mandatory values as OmegaConf raises them."""
        if key not in self.cfg.slots:
            if key in self.cfg.maps:  # a section where verl computes with a value: OmegaConf hands it a DictConfig
                if key not in self.read:
                    self.read.append(key)
                return DictConfig(key)
            missing = _first_missing(self.cfg, key)
            raise Violation(
                "config-key-missing",
                f"Key '{missing.rsplit('.', 1)[-1]}' is not in struct\n    full_key: {missing}\n    object_type=dict",
                "ConfigAttributeError",
                f"verl reads {key}, which the composed config of verl {self.release} does not have",
                keys=[key],
            )
        value, _ = self.cfg.resolve(key)
        if key not in self.read:
            self.read.append(key)
        if isinstance(value, Missing):
            raise Violation(
                "missing-mandatory-value",
                f"Missing mandatory value: {key}\n    full_key: {key}\n    object_type=dict",
                "MissingMandatoryValue",
                f"{key} has no default ('???') in verl {self.release} and the input does not set it",
                fixes=[Fix(f"set {key}", [(key, _MANDATORY_EXAMPLES.get(key, "VALUE"), False)])],
                keys=[key],
            )
        if isinstance(value, Unknown):
            raise Skip(f"{key}: {value.why}")
        return value

    def opt(self, key: str, default: Any = None) -> Any:
        """``config.section.get("key", default)``."""
        if key not in self.cfg.slots and key not in self.cfg.maps:
            return default
        return self.get(key)

    def derive(self, name: str, value: Any, how: str) -> Any:
        self.derived[name] = (value, how)
        return value


_MANDATORY_EXAMPLES = {"actor_rollout_ref.rollout.name": "vllm"}


def _first_missing(cfg: Composed, key: str) -> str:
    parts = key.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if prefix not in cfg.maps and prefix not in cfg.slots:
            return prefix
    return key


# --------------------------------------------------------------------------------------------------------------
# The checks' metadata: id, entry, verl's message per release

_ALL = ">=0.4.0"
_A = "actor_rollout_ref.actor"
_R = "actor_rollout_ref.rollout"
_REF = "actor_rollout_ref.ref"

CHECKS: dict[str, Check] = {}


def _check(check: Check) -> Check:
    CHECKS[check.id] = check
    return check


_check(
    Check(
        "hybrid-engine-required",
        "the trainer supports only the hybrid engine",
        None,
        verl_message=((_ALL, r"Currently, only support hybrid engine"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py RayPPOTrainer.__init__"),
            (">=0.6.0", "verl/trainer/ppo/ray_trainer.py RayPPOTrainer.__init__"),
        ),
    )
)
_check(
    Check(
        "config-value-error",
        "a value verl's arithmetic cannot use (a zero GPU count, ...)",
        "config-value-type-error",
        verl_message=((_ALL, r"by zero|invalid literal|could not convert"),),
    )
)
_check(
    Check(
        "critic-model-path-not-found",
        "the critic's model path does not exist where preflight runs",
        "model-path-not-found",
        verl_message=(
            (
                ">=0.7.0",
                r"Repo id must be|does not appear to have a file|No such file|not a valid model"
                r"|Incorrect path_or_model_id|HFValidationError|OSError|HFModelConfig",
            ),
        ),
        source=((">=0.7.0", "verl/workers/config/model.py HFModelConfig.__post_init__ (via CriticConfig)"),),
    )
)
_check(
    Check(
        "legacy-mini-batch-per-rank",
        "the mini batch per data-parallel rank is below 1 or not a multiple of the micro batch (legacy workers)",
        "legacy-mini-batch-micro-divisibility",
        stage="workers",
        severity="later",
        verl_message=(
            (_ALL, r"should be larger than 0 after normalization|normalized ppo_mini_batch_size \d+ should be"),
        ),
        source=(("<0.8.0", "verl/workers/fsdp_workers.py ActorRolloutRefWorker.__init__ (normalize config)"),),
    )
)
_check(
    Check(
        "engine-mini-batch-per-rank",
        "the mini batch does not split over the data-parallel ranks and micro batches (engine workers)",
        "engine-mini-batch-dp-divisibility",
        stage="training",
        severity="later",
        verl_message=(
            (_ALL, r"Got mini_batch_size=\d+ and self\.engine|data size must be divisible by force_group_size"),
        ),
        source=((">=0.8.0", "verl/workers/engine_workers.py / verl/workers/engine/utils.py prepare_micro_batches"),),
    )
)
_check(
    Check(
        "interpolation-key-missing",
        "an interpolation names a key the overrides removed",
        None,
        verl_message=((_ALL, r"Interpolation key '.*' not found|InterpolationKeyError"),),
        source=(
            (
                "<0.9.0",
                "verl/trainer/main_ppo.py TaskRunner.run (pprint(OmegaConf.to_container(config, resolve=True)))",
            ),
        ),
    )
)
_check(
    Check(
        "kl-ctrl-invalid",
        "algorithm.kl_ctrl is not a controller verl has",
        None,
        verl_message=((_ALL, r"^$|horizon must be larger than 0"),),
        source=(("<0.6.0", "verl/trainer/ppo/core_algos.py get_kl_controller (from RayPPOTrainer.__init__)"),),
    )
)
_check(
    Check(
        "adv-estimator-unknown",
        "algorithm.adv_estimator is not one verl knows",
        None,
        verl_message=(("<0.6.0", r"^$"), (">=0.6.0", r"is not a valid AdvantageEstimator|NotImplementedError|^$")),
        source=(("<0.6.0", "verl/trainer/ppo/ray_trainer.py RayPPOTrainer.__init__ (use_critic)"),),
    )
)
_check(
    Check(
        "megatron-parallel-not-dividing-gpus",
        "megatron TP x PP x CP does not divide the GPUs",
        None,
        verl_message=((_ALL, r"n_gpus \(\d+\) must be divisible by model_parallel_size"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/utils/config.py validate_config"),
        ),
    )
)
_check(
    Check(
        "real-train-batch-not-divisible",
        "train_batch_size x rollout.n is not a multiple of the data-parallel size",
        "real-train-batch-not-divisible",
        verl_message=((_ALL, r"real_train_batch_size \([^)]*\) must be divisible by minimal possible batch size"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/utils/config.py validate_config"),
        ),
    )
)
_check(
    Check(
        "actor-micro-batch-unset",
        "the actor's micro batch size is not set",
        "actor-micro-batch-unset",
        verl_message=(
            ("<0.6.0", r"\[actor_rollout_ref\.actor\] Please set at least one of"),
            (">=0.6.0", r"\[actor\] Please set at least one of 'actor\.ppo_micro_batch_size'"),
        ),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/actor.py ActorConfig.__post_init__"),
        ),
    )
)
_check(
    Check(
        "actor-micro-batch-both-set",
        "the actor's micro batch size is set twice",
        "micro-batch-both-set",
        verl_message=(
            ("<0.6.0", r"\[actor_rollout_ref\.actor\] You have set both"),
            (">=0.6.0", r"\[actor\] You have set both 'actor\.ppo_micro_batch_size' AND"),
        ),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/actor.py ActorConfig.__post_init__"),
        ),
    )
)
_check(
    Check(
        "loss-agg-mode-invalid",
        "actor.loss_agg_mode is not one verl knows",
        "invalid-loss-agg-mode",
        verl_message=((_ALL, r"Invalid loss_agg_mode: "),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/actor.py ActorConfig.__post_init__"),
        ),
    )
)
_check(
    Check(
        "train-batch-smaller-than-mini-batch",
        "train_batch_size is smaller than ppo_mini_batch_size",
        "train-batch-smaller-than-mini-batch",
        verl_message=(("<0.6.0", r"^$"), (">=0.6.0", r"train_batch_size \(.*\) must be >= actor\.ppo_mini_batch_size")),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/actor.py ActorConfig.validate"),
        ),
    )
)
_check(
    Check(
        "actor-mini-not-divisible-by-micro",
        "ppo_mini_batch_size is not a multiple of the deprecated ppo_micro_batch_size",
        "batch-size-train-mini-micro",
        verl_message=(
            ("<0.6.0", r"^$"),
            (">=0.6.0", r"ppo_mini_batch_size \(\d+\) must be divisible by ppo_micro_batch_size"),
        ),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/actor.py ActorConfig.validate"),
        ),
    )
)
_check(
    Check(
        "actor-micro-times-sp-below-gpus",
        "the deprecated global ppo_micro_batch_size x ulysses size is below the GPU count",
        "batch-size-train-mini-micro",
        verl_message=(
            ("<0.6.0", r"^$"),
            (">=0.6.0", r"ppo_micro_batch_size \(\d+\) \* ulysses_sequence_parallel_size \(\d+\) must be >= n_gpus"),
        ),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/actor.py ActorConfig.validate"),
        ),
    )
)
_check(
    Check(
        "actor-ulysses-needs-remove-padding",
        "ulysses sequence parallelism without use_remove_padding",
        "ulysses-sp-needs-remove-padding",
        verl_message=(
            (_ALL, r"When using sequence parallelism for actor/ref policy, you must enable `use_remove_padding`"),
        ),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/actor.py FSDPActorConfig.validate"),
        ),
    )
)
_check(
    Check(
        "ref-log-prob-micro-batch-unset",
        "the reference model's log-prob micro batch size is not set",
        "log-prob-micro-batch-unset",
        verl_message=((_ALL, r"\[actor_rollout_ref\.ref\] Please set at least one of"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/utils/config.py validate_config"),
        ),
    )
)
_check(
    Check(
        "ref-log-prob-micro-batch-both-set",
        "the reference model's log-prob micro batch size is set twice",
        "micro-batch-both-set",
        verl_message=((_ALL, r"\[actor_rollout_ref\.ref\] You have set both"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/utils/config.py validate_config"),
        ),
    )
)
_check(
    Check(
        "rollout-log-prob-micro-batch-unset",
        "the rollout's log-prob micro batch size is not set",
        "log-prob-micro-batch-unset",
        verl_message=((_ALL, r"\[actor_rollout_ref\.rollout\] Please set at least one of"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/utils/config.py validate_config"),
        ),
    )
)
_check(
    Check(
        "rollout-log-prob-micro-batch-both-set",
        "the rollout's log-prob micro batch size is set twice",
        "micro-batch-both-set",
        verl_message=((_ALL, r"\[actor_rollout_ref\.rollout\] You have set both"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/utils/config.py validate_config"),
        ),
    )
)
_check(
    Check(
        "critic-micro-batch-unset",
        "the critic's micro batch size is not set (the critic is used)",
        "critic-micro-batch-unset",
        verl_message=((_ALL, r"\[critic\] Please set at least one of 'critic\.(?:ppo_)?micro_batch_size'"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/critic.py CriticConfig.__post_init__"),
        ),
    )
)
_check(
    Check(
        "critic-micro-batch-both-set",
        "the critic's micro batch size is set twice",
        "micro-batch-both-set",
        verl_message=((_ALL, r"\[critic\] You have set both"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/critic.py CriticConfig.__post_init__"),
        ),
    )
)
_check(
    Check(
        "critic-mini-not-divisible-by-micro",
        "critic.ppo_mini_batch_size is not a multiple of the deprecated critic.ppo_micro_batch_size",
        "batch-size-train-mini-micro",
        verl_message=(
            ("<0.6.0", r"^$"),
            (">=0.6.0", r"\[critic\] ppo_mini_batch_size \(\d+\) must be divisible by ppo_micro_batch_size"),
        ),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/critic.py CriticConfig.__post_init__"),
        ),
    )
)
_check(
    Check(
        "critic-train-batch-smaller-than-mini-batch",
        "train_batch_size is smaller than critic.ppo_mini_batch_size",
        "train-batch-smaller-than-mini-batch",
        verl_message=(
            ("<0.6.0", r"^$"),
            (">=0.6.0", r"train_batch_size \(.*\) must be >= critic\.ppo_mini_batch_size"),
        ),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/critic.py CriticConfig.validate"),
        ),
    )
)
_check(
    Check(
        "critic-micro-times-sp-below-gpus",
        "the deprecated critic.ppo_micro_batch_size x ulysses size is below the GPU count",
        "batch-size-train-mini-micro",
        verl_message=(
            ("<0.6.0", r"^$"),
            (
                ">=0.6.0",
                r"critic\.ppo_micro_batch_size \(\d+\) \* ulysses_sequence_parallel_size \(\d+\) must be >= n_gpus",
            ),
        ),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/critic.py FSDPCriticConfig.validate"),
        ),
    )
)
_check(
    Check(
        "critic-ulysses-needs-remove-padding",
        "critic ulysses sequence parallelism without use_remove_padding",
        "ulysses-sp-needs-remove-padding",
        verl_message=((_ALL, r"When using sequence parallelism for critic, you must enable `use_remove_padding`"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/workers/config/critic.py FSDPCriticConfig.__post_init__"),
        ),
    )
)
_check(
    Check(
        "reward-model-micro-batch-unset",
        "the reward model's micro batch size is not set",
        "log-prob-micro-batch-unset",
        verl_message=((_ALL, r"\[reward_model\] Please set at least one of"),),
        source=(("<0.7.1", "validate_config / _validate_config"),),
    )
)
_check(
    Check(
        "reward-model-micro-batch-both-set",
        "the reward model's micro batch size is set twice",
        "micro-batch-both-set",
        verl_message=((_ALL, r"\[reward_model\] You have set both"),),
        source=(("<0.7.1", "validate_config / _validate_config"),),
    )
)
_check(
    Check(
        "val-do-sample-zero-temperature",
        "validation sampling with temperature 0",
        "val-do-sample-zero-temperature",
        verl_message=((_ALL, r"validation gen temperature should be greater than 0 when enabling do_sample"),),
        source=(
            ("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),
            (">=0.6.0", "verl/utils/config.py validate_config"),
        ),
    )
)
_check(
    Check(
        "multi-turn-needs-tool-config",
        "multi_turn enabled without a tool (or interaction) config",
        "multi-turn-requires-tool-config",
        verl_message=(
            ("<0.4.1", r"tool_config_path must be set when enabling multi_turn"),
            ("<0.6.0", r"tool_config_path or interaction_config_path must be set when enabling multi_turn"),
        ),
        source=(("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),),
    )
)
_check(
    Check(
        "multi-turn-needs-grpo",
        "multi_turn with tools is tested only with GRPO",
        "multi-turn-requires-tool-config",
        verl_message=(("<0.6.0", r"only GRPO is tested for multi-turn with tool"),),
        source=(("<0.6.0", "verl/trainer/ppo/ray_trainer.py _validate_config"),),
    )
)
_check(
    Check(
        "lora-rank-too-large-vllm",
        "LoRA rank above what vLLM supports",
        None,
        verl_message=(("<0.7.1", r"LoRA rank in vLLM must be less than or equal to 512"),),
        source=((">=0.6.1,<0.7.1", "verl/utils/config.py validate_config"),),
    )
)
_check(
    Check(
        "lora-vllm-import",
        "LoRA with vLLM: validation imports vLLM to check the rank",
        "vllm-not-installed",
        severity="warning",
        source=((">=0.7.1", "verl/utils/config.py validate_config (get_vllm_max_lora_rank)"),),
    )
)
_check(
    Check(
        "config-value-type-error",
        "a value of the wrong type reaches verl's arithmetic",
        "config-value-type-error",
        verl_message=(
            (
                _ALL,
                r"not supported between instances of|unsupported operand type|not all arguments converted"
                r"|can't multiply sequence|must be real number|object cannot be interpreted",
            ),
        ),
    )
)
_check(
    Check(
        "config-key-missing",
        "verl reads a key the composed config lacks",
        "hydra-override-key-not-in-struct",
        verl_message=((_ALL, r"is not in struct"),),
    )
)
_check(
    Check(
        "missing-mandatory-value",
        "a mandatory value ('???') is not set",
        "rollout-name-missing",
        verl_message=((_ALL, r"Missing mandatory value|has missing mandatory value"),),
    )
)
_check(
    Check(
        "unexpected-dataclass-field",
        "a key verl's config dataclass does not take",
        "hydra-override-key-not-in-struct",
        verl_message=((">=0.6.0", r"got an unexpected keyword argument"),),
    )
)
_check(
    Check(
        "strategy-unknown",
        "the actor/critic strategy is not one verl implements",
        None,
        verl_message=((_ALL, r"^$|Invalid use_legacy_worker_impl"),),
        source=(("<0.8.0", "verl/trainer/main_ppo.py TaskRunner.add_actor_rollout_worker / add_critic_worker"),),
    )
)
_check(
    Check(
        "rollout-name-unset",
        "actor_rollout_ref.rollout.name is not set",
        "rollout-name-missing",
        stage="workers",
        severity="later",
        source=((">=0.6.0", "verl/workers/config/rollout.py RolloutConfig (name: ???)"),),
    )
)
_check(
    Check(
        "rollout-mode-sync-removed",
        "rollout.mode=sync was removed",
        "rollout-mode-sync-removed",
        stage="workers",
        severity="later",
        source=((">=0.7.0", "verl/workers/config/rollout.py RolloutConfig.__post_init__"),),
    )
)
_check(
    Check(
        "dynamic-bsz-token-budget-too-small",
        "the dynamic-batch token budget is below prompt + response length",
        "dynamic-bsz-max-token-len-too-small",
        stage="training",
        severity="later",
        source=((_ALL, "verl/utils/seqlen_balancing.py (max_token_len must be greater than the sequence length)"),),
    )
)
_check(
    Check(
        "legacy-mini-batch-per-rank",
        "the mini batch per data-parallel rank is below 1 or not a multiple of the micro batch",
        "legacy-mini-batch-micro-divisibility",
        stage="workers",
        severity="later",
        source=(("<0.8.0", "verl/workers/fsdp_workers.py ActorRolloutRefWorker.__init__ (normalisation)"),),
    )
)


# Hydra's refusals while it composes the overrides (kb.preflight.hydra_stage): Hydra's words, the same at every
# release (verl pins hydra-core 1.3); the entry depends on the key (hydra_stage.entry_for_key).
_HYDRA = "hydra/_internal/config_loader_impl.py (Hydra 1.3)"
for _id, _title, _regex in (
    (
        "hydra-key-not-in-struct",
        "a key the release's config lacks, without '+'",
        r"Could not override|is not in struct",
    ),
    ("hydra-append-existing-key", "'+' on a key the config has", r"Could not append to config"),
    ("hydra-group-option-missing", "a config-group option the release does not ship", r"Could not find '"),
    ("hydra-delete-missing-key", "'~' of a key the config lacks", r"Could not delete from config"),
    ("hydra-sweep-without-multirun", "a comma list is a sweep without --multirun", r"Ambiguous value for argument"),
    (
        "hydra-override-grammar",
        "an override Hydra's grammar cannot parse",
        r"Error parsing override|mismatched input|no viable alternative|extraneous input|missing .* at"
        r"|token recognition error|Unknown function|HydraException|LexerNoViableAltException",
    ),
):
    _check(Check(_id, _title, None, stage="hydra", verl_message=((_ALL, _regex),), source=((_ALL, _HYDRA),)))


# --------------------------------------------------------------------------------------------------------------
# The steps, in verl's order

Step = Callable[[Ctx], None]


def _n_gpus(ctx: Ctx) -> Any:
    n = ctx.get("trainer.n_gpus_per_node") * ctx.get("trainer.nnodes")
    return ctx.derive("n_gpus", n, "trainer.n_gpus_per_node * trainer.nnodes")


def _adv_uses_critic_legacy(ctx: Ctx) -> bool:
    est = ctx.get("algorithm.adv_estimator")
    if est == "gae":
        return True
    known = ["grpo", "grpo_passk", "reinforce_plus_plus", "remax", "rloo", "opo", "reinforce_plus_plus_baseline"]
    if ctx.at(">=0.5.0"):
        known.append("gpg")
    if est in known:
        return False
    raise Violation(
        "adv-estimator-unknown",
        "",
        "NotImplementedError",
        f"RayPPOTrainer raises a bare NotImplementedError for algorithm.adv_estimator={est!r}: verl {ctx.release} "
        f"knows gae, {', '.join(known)}",
        fixes=[
            Fix("use an estimator verl knows", [("algorithm.adv_estimator", "grpo", False)]),
            Fix("or PPO with a critic", [("algorithm.adv_estimator", "gae", False)]),
        ],
        keys=["algorithm.adv_estimator"],
    )


def use_critic(ctx: Ctx) -> bool:
    """``need_critic`` (0.6+) or the trainer's own test (0.4-0.5)."""
    if ctx.at("<0.6.0"):
        return _adv_uses_critic_legacy(ctx)
    enable = ctx.opt("critic.enable")
    if enable is not None:
        return bool(enable)
    return bool(ctx.get("algorithm.adv_estimator") == "gae")


def use_reference(ctx: Ctx) -> bool:
    """main_ppo adds the reference policy when a KL term is used (0.4-0.8 via the role mapping, the same test)."""
    return bool(ctx.opt("algorithm.use_kl_in_reward", False) or ctx.get(f"{_A}.use_kl_loss"))


def _batch_fixes(ctx: Ctx, minimal: str) -> list[Fix]:
    return [
        Fix(
            "raise data.train_batch_size to the next size that divides evenly",
            [
                (
                    "data.train_batch_size",
                    f"ceil(data.train_batch_size * {_R}.n / lcm({minimal}, {_R}.n)) * lcm({minimal}, {_R}.n) / {_R}.n",
                    True,
                )
            ],
        ),
        Fix(
            "or lower data.train_batch_size to the previous one",
            [
                (
                    "data.train_batch_size",
                    f"max(1, data.train_batch_size * {_R}.n // lcm({minimal}, {_R}.n))"
                    f" * lcm({minimal}, {_R}.n) / {_R}.n",
                    True,
                )
            ],
        ),
        Fix(
            "or use a GPU count that divides train_batch_size x rollout.n",
            [("trainer.n_gpus_per_node", f"gcd(data.train_batch_size * {_R}.n, trainer.n_gpus_per_node)", True)],
        ),
    ]


def step_trainer_init(ctx: Ctx) -> None:
    if not ctx.get("actor_rollout_ref.hybrid_engine"):
        raise Violation(
            "hybrid-engine-required",
            "Currently, only support hybrid engine",
            "AssertionError",
            "RayPPOTrainer asserts actor_rollout_ref.hybrid_engine",
            fixes=[Fix("turn the hybrid engine back on", [("actor_rollout_ref.hybrid_engine", True, False)])],
            keys=["actor_rollout_ref.hybrid_engine"],
        )
    if ctx.get("algorithm.use_kl_in_reward"):  # core_algos.get_kl_controller(config.algorithm.kl_ctrl)
        kind = ctx.get("algorithm.kl_ctrl.type")
        if kind == "adaptive":
            horizon = ctx.get("algorithm.kl_ctrl.horizon")
            if not horizon > 0:
                raise Violation(
                    "kl-ctrl-invalid",
                    f"horizon must be larger than 0. Got {horizon}",
                    "AssertionError",
                    "the adaptive KL controller divides by its horizon",
                    fixes=[Fix("use a positive horizon", [("algorithm.kl_ctrl.horizon", 10000, False)])],
                )
        elif kind != "fixed":
            raise Violation(
                "kl-ctrl-invalid",
                "",
                "NotImplementedError",
                f"algorithm.kl_ctrl.type is fixed or adaptive, not {kind!r}",
                fixes=[Fix("use a KL controller verl has", [("algorithm.kl_ctrl.type", "fixed", False)])],
                keys=["algorithm.kl_ctrl.type"],
            )


def step_critic_need_legacy(ctx: Ctx) -> None:
    _adv_uses_critic_legacy(ctx)


def step_batch_total(ctx: Ctx) -> None:
    if ctx.at(">=0.6.0") and ctx.get(f"{_A}.use_dynamic_bsz"):
        return
    n_gpus = _n_gpus(ctx)
    if ctx.get(f"{_A}.strategy") == "megatron":
        tp = ctx.get(f"{_A}.megatron.tensor_model_parallel_size")
        pp = ctx.get(f"{_A}.megatron.pipeline_model_parallel_size")
        mp = ctx.derive("model_parallel_size", tp * pp, "tensor x pipeline parallel size")
        cp = ctx.get(f"{_A}.megatron.context_parallel_size")
        if n_gpus % (mp * cp) != 0:
            raise Violation(
                "megatron-parallel-not-dividing-gpus",
                f"n_gpus ({n_gpus}) must be divisible by model_parallel_size ({mp}) times context_parallel_size ({cp})",
                "AssertionError",
                "Megatron splits the GPUs into tensor x pipeline x context parallel groups; the rest is data parallel",
                fixes=[
                    Fix(
                        "use parallel sizes whose product divides the GPU count",
                        [
                            (
                                f"{_A}.megatron.tensor_model_parallel_size",
                                "gcd(n_gpus, " + f"{_A}.megatron.tensor_model_parallel_size)",
                                True,
                            )
                        ],
                    )
                ],
            )
        dp = ctx.derive("megatron_dp", n_gpus // (mp * cp), "n_gpus // (TP x PP x CP)")
        minimal = ctx.derive(
            "minimal_bsz",
            dp * ctx.get(f"{_A}.ppo_micro_batch_size_per_gpu"),
            "megatron_dp x actor.ppo_micro_batch_size_per_gpu",
        )
        minimal_name = "minimal_bsz"
    else:
        minimal = ctx.derive("minimal_bsz", n_gpus, "n_gpus")
        minimal_name = "n_gpus"
    real = ctx.derive(
        "real_train_batch_size",
        ctx.get("data.train_batch_size") * ctx.get(f"{_R}.n"),
        "data.train_batch_size * rollout.n",
    )
    if real % minimal != 0:
        raise Violation(
            "real-train-batch-not-divisible",
            f"real_train_batch_size ({real}) must be divisible by minimal possible batch size ({minimal})",
            "AssertionError",
            "every data-parallel rank must get the same number of sequences: train_batch_size x rollout.n must be a "
            "multiple of the data-parallel size",
            fixes=_batch_fixes(ctx, minimal_name),
        )


#: the name verl's check_mutually_exclusive prints for each section's micro batch (its ``settings`` table), which is
#: not always the key: the actor's and the critic's are ppo_micro_batch_size[_per_gpu] but print as micro_batch_size
_PRINTED = {_A: "micro_batch_size", "critic": "micro_batch_size", "reward_model": "micro_batch_size"}


def _mutually_exclusive(
    ctx: Ctx, section: str, param: str, label: str, check_unset: str, check_both: str, example: int = 1
) -> None:
    mbs = ctx.get(f"{section}.{param}")
    per_gpu = ctx.get(f"{section}.{param}_per_gpu")
    shown = _PRINTED.get(section, param)
    if mbs is None and per_gpu is None:
        raise Violation(
            check_unset,
            f"[{label}] Please set at least one of '{label}.{shown}' or '{label}.{shown}_per_gpu'.",
            explanation=f"without dynamic batching verl needs a micro batch size for {section}",
            fixes=[
                Fix(f"set {section}.{param}_per_gpu", [(f"{section}.{param}_per_gpu", example, False)]),
                Fix("or pack micro batches by tokens (dynamic batching)", [(_dynamic_key(section), True, False)]),
            ],
        )
    if mbs is not None and per_gpu is not None:
        raise Violation(
            check_both,
            f"[{label}] You have set both '{label}.{shown}' AND '{label}.{shown}_per_gpu'. Please remove "
            f"'{label}.{shown}' because only '*_{shown}_per_gpu'"
            + (" " if ctx.at(">=0.5.0") else "")  # 0.4.x joins the two strings without a space
            + "is supported (the former is deprecated).",
            explanation=f"{section}.{param} is deprecated and cannot be set beside {param}_per_gpu",
            fixes=[Fix(f"drop the deprecated {section}.{param}", [(f"{section}.{param}", None, False)])],
        )


def _dynamic_key(section: str) -> str:
    """The flag whose True skips the micro batch check of ``section``: verl gates the actor's, the reference's and
    the rollout's on the actor's use_dynamic_bsz (the other two follow it by interpolation)."""
    if section in (_REF, _R, _A):
        return f"{_A}.use_dynamic_bsz"
    return f"{section}.use_dynamic_bsz"


def step_legacy_micro(ctx: Ctx) -> None:
    """0.4-0.5: the actor's, reference's and rollout's micro batch settings."""
    if ctx.get(f"{_A}.use_dynamic_bsz"):
        return
    _mutually_exclusive(ctx, _A, "ppo_micro_batch_size", _A, "actor-micro-batch-unset", "actor-micro-batch-both-set")


def step_legacy_ref_micro(ctx: Ctx) -> None:
    if ctx.get(f"{_A}.use_dynamic_bsz") or not use_reference(ctx):
        return
    _mutually_exclusive(
        ctx,
        _REF,
        "log_prob_micro_batch_size",
        _REF,
        "ref-log-prob-micro-batch-unset",
        "ref-log-prob-micro-batch-both-set",
    )


def step_rollout_micro(ctx: Ctx) -> None:
    if ctx.get(f"{_A}.use_dynamic_bsz"):
        return
    _mutually_exclusive(
        ctx,
        _R,
        "log_prob_micro_batch_size",
        _R,
        "rollout-log-prob-micro-batch-unset",
        "rollout-log-prob-micro-batch-both-set",
    )


def step_legacy_critic_micro(ctx: Ctx) -> None:
    if not use_critic(ctx) or ctx.get("critic.use_dynamic_bsz"):
        return
    _mutually_exclusive(
        ctx, "critic", "ppo_micro_batch_size", "critic", "critic-micro-batch-unset", "critic-micro-batch-both-set"
    )


def step_reward_model_micro(ctx: Ctx) -> None:
    if not ctx.get("reward_model.enable") or ctx.get("reward_model.use_dynamic_bsz"):
        return
    if ctx.at(">=0.7.0") and ctx.get("reward_model.use_reward_loop"):
        return
    _mutually_exclusive(
        ctx,
        "reward_model",
        "micro_batch_size",
        "reward_model",
        "reward-model-micro-batch-unset",
        "reward-model-micro-batch-both-set",
    )


def _mini_fixes() -> list[Fix]:
    return [
        Fix(
            "lower ppo_mini_batch_size to the train batch",
            [(f"{_A}.ppo_mini_batch_size", "data.train_batch_size", True)],
        ),
        Fix(
            "or raise data.train_batch_size to the mini batch",
            [("data.train_batch_size", f"{_A}.ppo_mini_batch_size", True)],
        ),
    ]


def step_legacy_actor_batch(ctx: Ctx) -> None:
    if ctx.get(f"{_A}.use_dynamic_bsz"):
        return
    if not ctx.get("data.train_batch_size") >= ctx.get(f"{_A}.ppo_mini_batch_size"):
        raise Violation(
            "train-batch-smaller-than-mini-batch",
            "",
            "AssertionError",
            "a bare assert: data.train_batch_size >= actor.ppo_mini_batch_size",
            fixes=_mini_fixes(),
        )
    sp = ctx.opt(f"{_A}.ulysses_sequence_parallel_size", 1)
    mbs = ctx.get(f"{_A}.ppo_micro_batch_size")
    if mbs is not None:
        if ctx.get(f"{_A}.ppo_mini_batch_size") % mbs != 0:
            raise Violation(
                "actor-mini-not-divisible-by-micro",
                "",
                "AssertionError",
                "a bare assert: ppo_mini_batch_size % ppo_micro_batch_size == 0",
                fixes=[
                    Fix(
                        "use the per-GPU micro batch instead",
                        [(f"{_A}.ppo_micro_batch_size", None, False), (f"{_A}.ppo_micro_batch_size_per_gpu", 1, False)],
                    )
                ],
            )
        if not mbs * sp >= _n_gpus(ctx):
            raise Violation(
                "actor-micro-times-sp-below-gpus",
                "",
                "AssertionError",
                "a bare assert: ppo_micro_batch_size * ulysses_sequence_parallel_size >= n_gpus",
                fixes=[
                    Fix(
                        "use the per-GPU micro batch instead",
                        [(f"{_A}.ppo_micro_batch_size", None, False), (f"{_A}.ppo_micro_batch_size_per_gpu", 1, False)],
                    )
                ],
            )


_LEGACY_AGG = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]


def _loss_agg_modes(ctx: Ctx) -> list[str]:
    if ctx.at(">=0.9.0"):
        return ["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
    return list(_LEGACY_AGG)


def step_loss_agg_mode(ctx: Ctx) -> None:
    mode = ctx.get(f"{_A}.loss_agg_mode")
    allowed = _loss_agg_modes(ctx)
    if mode not in allowed:
        import difflib

        close = difflib.get_close_matches(str(mode), allowed, n=1, cutoff=0.5)
        raise Violation(
            "loss-agg-mode-invalid",
            f"Invalid loss_agg_mode: {mode}",
            "AssertionError" if ctx.at("<0.6.0") else "ValueError",
            f"verl {ctx.release} accepts {', '.join(allowed)}",
            fixes=[Fix("use a mode verl knows", [(f"{_A}.loss_agg_mode", close[0] if close else "token-mean", False)])],
        )


def step_legacy_critic_batch(ctx: Ctx) -> None:
    if not use_critic(ctx) or ctx.get("critic.use_dynamic_bsz"):
        return
    if not ctx.get("data.train_batch_size") >= ctx.get("critic.ppo_mini_batch_size"):
        raise Violation(
            "critic-train-batch-smaller-than-mini-batch",
            "",
            "AssertionError",
            "a bare assert: data.train_batch_size >= critic.ppo_mini_batch_size",
            fixes=[
                Fix("lower critic.ppo_mini_batch_size", [("critic.ppo_mini_batch_size", "data.train_batch_size", True)])
            ],
        )
    sp = ctx.opt("critic.ulysses_sequence_parallel_size", 1)
    mbs = ctx.get("critic.ppo_micro_batch_size")
    if mbs is not None:
        if ctx.get("critic.ppo_mini_batch_size") % mbs != 0:
            raise Violation(
                "critic-mini-not-divisible-by-micro",
                "",
                "AssertionError",
                "a bare assert: critic.ppo_mini_batch_size % critic.ppo_micro_batch_size == 0",
            )
        if not mbs * sp >= _n_gpus(ctx):
            raise Violation(
                "critic-micro-times-sp-below-gpus",
                "",
                "AssertionError",
                "a bare assert: critic.ppo_micro_batch_size * ulysses size >= n_gpus",
            )


def _remove_padding_fix(key: str) -> list[Fix]:
    return [Fix("turn on remove-padding", [(key, True, False)]), Fix("or turn off sequence parallelism", [])]


def step_legacy_ulysses(ctx: Ctx) -> None:
    strategies = {"fsdp"} if ctx.at("<0.5.0") else {"fsdp", "fsdp2"}
    if (
        ctx.get(f"{_A}.strategy") in strategies
        and (
            ctx.opt(f"{_A}.ulysses_sequence_parallel_size", 1) > 1
            or ctx.opt(f"{_REF}.ulysses_sequence_parallel_size", 1) > 1
        )
        and not ctx.get("actor_rollout_ref.model.use_remove_padding")
    ):
        raise Violation(
            "actor-ulysses-needs-remove-padding",
            "When using sequence parallelism for actor/ref policy, you must enable `use_remove_padding`.",
            "AssertionError",
            "Ulysses splits the packed (unpadded) sequences across ranks",
            fixes=_remove_padding_fix("actor_rollout_ref.model.use_remove_padding"),
        )
    critic_sp = use_critic(ctx) and ctx.get("critic.strategy") in strategies
    sp_on = critic_sp and ctx.opt("critic.ulysses_sequence_parallel_size", 1) > 1
    if sp_on and not ctx.get("critic.model.use_remove_padding"):
        raise Violation(
            "critic-ulysses-needs-remove-padding",
            "When using sequence parallelism for critic, you must enable `use_remove_padding`.",
            "AssertionError",
            "Ulysses splits the packed (unpadded) sequences across ranks",
            fixes=_remove_padding_fix("critic.model.use_remove_padding"),
        )


def step_val_do_sample(ctx: Ctx) -> None:
    if ctx.get(f"{_R}.val_kwargs.do_sample") and not ctx.get(f"{_R}.temperature") > 0:
        raise Violation(
            "val-do-sample-zero-temperature",
            "validation gen temperature should be greater than 0 when enabling do_sample",
            "AssertionError",
            "verl checks rollout.temperature (not val_kwargs.temperature) when validation samples",
            fixes=[
                Fix("sample at a positive temperature", [(f"{_R}.temperature", 1.0, False)]),
                Fix("or validate greedily", [(f"{_R}.val_kwargs.do_sample", False, False)]),
            ],
        )


def step_legacy_multi_turn(ctx: Ctx) -> None:
    if not ctx.get(f"{_R}.multi_turn.enable"):
        return
    tool = ctx.get(f"{_R}.multi_turn.tool_config_path")
    if ctx.at("<0.4.1"):
        if tool is None:
            raise Violation(
                "multi-turn-needs-tool-config",
                "tool_config_path must be set when enabling multi_turn with tool, due to no role-playing support",
                "AssertionError",
                "multi-turn rollouts need a tool config",
            )
    elif tool is None and ctx.get(f"{_R}.multi_turn.interaction_config_path") is None:
        raise Violation(
            "multi-turn-needs-tool-config",
            "tool_config_path or interaction_config_path must be set when enabling multi_turn with tool, due "
            "to no role-playing support",
            "AssertionError",
            "multi-turn rollouts need a tool or interaction config",
        )
    if ctx.get("algorithm.adv_estimator") not in ["grpo"]:
        raise Violation(
            "multi-turn-needs-grpo",
            "only GRPO is tested for multi-turn with tool",
            "AssertionError",
            "verl 0.4-0.5 allow multi-turn with tools only with GRPO",
            fixes=[Fix("use GRPO", [("algorithm.adv_estimator", "grpo", False)])],
        )


# -- 0.6+: the actor and critic dataclasses ---------------------------------------------------------------------


def _fields_check(ctx: Ctx, section: str) -> None:
    """``hydra.utils.instantiate`` of a ``_target_`` section passes every key as a keyword argument: a key added
    with '+' that the dataclass lacks ends in a TypeError."""
    keys = ctx.cfg.keys
    for key, slot in ctx.cfg.slots.items():
        if not key.startswith(section + ".") or slot.source == "default" or key in keys:
            continue
        owner = _target_owner(key, keys)
        if owner is None:
            continue
        arg = key[len(owner) + 1 :].split(".", 1)[0]
        cls = str(keys[f"{owner}._target_"].get("default", "")).rsplit(".", 1)[-1]
        raise Violation(
            "unexpected-dataclass-field",
            f"{cls}.__init__() got an unexpected keyword argument '{arg}'",
            "TypeError",
            f"{owner} becomes verl's {cls} dataclass, which has no field {arg}",
            fixes=[Fix(f"drop {key}", [])],
            keys=[key],
        )


def _target_owner(key: str, keys: dict[str, dict[str, Any]]) -> str | None:
    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in keys:
            return prefix if f"{prefix}._target_" in keys else None
    return None


def step_actor_dataclass(ctx: Ctx) -> None:
    """``omega_conf_to_dataclass(actor)``: ActorConfig.__post_init__."""
    _fields_check(ctx, _A)
    if not ctx.get(f"{_A}.use_dynamic_bsz"):
        mbs = ctx.get(f"{_A}.ppo_micro_batch_size")
        per_gpu = ctx.get(f"{_A}.ppo_micro_batch_size_per_gpu")
        if mbs is not None and per_gpu is not None:
            raise Violation(
                "actor-micro-batch-both-set",
                "[actor] You have set both 'actor.ppo_micro_batch_size' AND 'actor.ppo_micro_batch_size_per_gpu'. "
                "Please remove 'actor.ppo_micro_batch_size' because only '*_ppo_micro_batch_size_per_gpu' is "
                "supported (the former is deprecated).",
                explanation="actor.ppo_micro_batch_size is deprecated and cannot be set beside its _per_gpu twin",
                fixes=[
                    Fix("drop the deprecated actor.ppo_micro_batch_size", [(f"{_A}.ppo_micro_batch_size", None, False)])
                ],
            )
        if mbs is None and per_gpu is None:
            raise Violation(
                "actor-micro-batch-unset",
                "[actor] Please set at least one of 'actor.ppo_micro_batch_size' or "
                "'actor.ppo_micro_batch_size_per_gpu' if use_dynamic_bsz is not enabled.",
                "AssertionError",
                "without dynamic batching verl needs the actor's micro batch size",
                fixes=[
                    Fix("set the per-GPU micro batch", [(f"{_A}.ppo_micro_batch_size_per_gpu", 1, False)]),
                    Fix("or let verl pack micro batches by tokens", [(f"{_A}.use_dynamic_bsz", True, False)]),
                ],
            )
    step_loss_agg_mode(ctx)


def step_actor_validate(ctx: Ctx) -> None:
    """``actor_config.validate(n_gpus, data.train_batch_size, model)``."""
    n_gpus = _n_gpus(ctx)
    train = ctx.get("data.train_batch_size")
    if not ctx.get(f"{_A}.use_dynamic_bsz"):
        mini = ctx.get(f"{_A}.ppo_mini_batch_size")
        if train < mini:
            raise Violation(
                "train-batch-smaller-than-mini-batch",
                f"train_batch_size ({train}) must be >= actor.ppo_mini_batch_size ({mini})",
                explanation="a mini batch is a slice of the train batch",
                fixes=_mini_fixes(),
            )
        sp = ctx.opt(f"{_A}.ulysses_sequence_parallel_size", 1)  # getattr(self, ..., 1): only FSDP actors have it
        mbs = ctx.get(f"{_A}.ppo_micro_batch_size")
        if mbs is not None:
            if mini % mbs != 0:
                raise Violation(
                    "actor-mini-not-divisible-by-micro",
                    f"ppo_mini_batch_size ({mini}) must be divisible by ppo_micro_batch_size ({mbs})",
                    explanation="the deprecated global micro batch must divide the mini batch",
                    fixes=[
                        Fix(
                            "use the per-GPU micro batch instead",
                            [
                                (f"{_A}.ppo_micro_batch_size", None, False),
                                (f"{_A}.ppo_micro_batch_size_per_gpu", 1, False),
                            ],
                        )
                    ],
                )
            if mbs * sp < n_gpus:
                raise Violation(
                    "actor-micro-times-sp-below-gpus",
                    f"ppo_micro_batch_size ({mbs}) * ulysses_sequence_parallel_size ({sp}) must be >= "
                    f"n_gpus ({n_gpus})",
                    explanation="the deprecated global micro batch is split over the GPUs",
                    fixes=[
                        Fix(
                            "use the per-GPU micro batch instead",
                            [
                                (f"{_A}.ppo_micro_batch_size", None, False),
                                (f"{_A}.ppo_micro_batch_size_per_gpu", 1, False),
                            ],
                        )
                    ],
                )
    strategy = ctx.get(f"{_A}.strategy")
    # 0.6-0.7: ActorConfig.validate tests the strategy; 0.8+: FSDPActorConfig.validate, whatever strategy it names
    fsdp = strategy in ("fsdp", "fsdp2") if ctx.at("<0.8.0") else ctx.cfg.has(f"{_A}.fsdp_config")
    sp_on = fsdp and ctx.opt(f"{_A}.ulysses_sequence_parallel_size", 1) > 1
    if sp_on and not ctx.opt("actor_rollout_ref.model.use_remove_padding", False):
        raise Violation(
            "actor-ulysses-needs-remove-padding",
            "When using sequence parallelism for actor/ref policy, you must enable `use_remove_padding`.",
            explanation="Ulysses splits the packed (unpadded) sequences across ranks",
            fixes=_remove_padding_fix("actor_rollout_ref.model.use_remove_padding"),
        )


def step_ref_rollout_micro(ctx: Ctx) -> None:
    if ctx.get(f"{_A}.use_dynamic_bsz"):
        return
    if use_reference(ctx):
        _mutually_exclusive(
            ctx,
            _REF,
            "log_prob_micro_batch_size",
            _REF,
            "ref-log-prob-micro-batch-unset",
            "ref-log-prob-micro-batch-both-set",
        )
    _mutually_exclusive(
        ctx,
        _R,
        "log_prob_micro_batch_size",
        _R,
        "rollout-log-prob-micro-batch-unset",
        "rollout-log-prob-micro-batch-both-set",
    )


def _local_path_missing(ctx: Ctx, path: Any) -> str | None:
    """The expanded path when ``path`` names a local directory that does not exist where the job reads it (a hub
    id such as ``Qwen/Qwen2.5-7B`` or a remote URL is never judged)."""
    import os

    if not isinstance(path, str) or not path.startswith(("/", "~", "./", "../")):
        return None
    expanded = os.path.expanduser(path)
    return None if ctx.cfg.path_exists(expanded) else expanded


def _critic_model_paths(ctx: Ctx) -> None:
    """HFModelConfig.__post_init__ loads the tokenizer (tokenizer_path, else path), then the HF config (path)."""
    path = ctx.get("critic.model.path")
    tokenizer = ctx.opt("critic.model.tokenizer_path")
    for key, value in (
        ("critic.model.tokenizer_path", tokenizer if tokenizer is not None else path),
        ("critic.model.path", path),
    ):
        missing = _local_path_missing(ctx, value)
        if missing is None:
            continue
        shown = key if key == "critic.model.path" or tokenizer is not None else "critic.model.path"
        raise Violation(
            "critic-model-path-not-found",
            f"{shown} {value} does not exist on this machine; verl {ctx.release} builds the critic's HFModelConfig "
            "while validating, which loads the tokenizer and the model config from it",
            "OSError",
            f"verl {ctx.release} builds the critic's model config while validating (algorithm.adv_estimator=gae or "
            "critic.enable)"
            + (
                "; critic.model.tokenizer_path defaults to the actor's model path"
                if tokenizer is not None and key.endswith("tokenizer_path")
                else ""
            ),
            fixes=[
                Fix(
                    "point the critic at a model that exists", [(shown, ctx.opt("actor_rollout_ref.model.path"), False)]
                ),
                Fix("or train without a critic (GRPO)", [("algorithm.adv_estimator", "grpo", False)]),
            ],
            keys=[k for k in ("critic.model.path", "critic.model.tokenizer_path") if ctx.cfg.has(k)],
        )


def step_critic_dataclass(ctx: Ctx) -> None:
    if not use_critic(ctx):
        return
    if ctx.at(">=0.8.0"):  # critic.model is an HFModelConfig, instantiated before the critic itself
        _critic_model_paths(ctx)
    _fields_check(ctx, "critic")
    if ctx.at(">=0.7.0,<0.8.0"):  # CriticConfig.__post_init__ builds HFModelConfig(path=..., tokenizer_path=...)
        _critic_model_paths(ctx)
    if not ctx.get("critic.use_dynamic_bsz"):
        mbs = ctx.get("critic.ppo_micro_batch_size")
        per_gpu = ctx.get("critic.ppo_micro_batch_size_per_gpu")
        if mbs is None and per_gpu is None:
            raise Violation(
                "critic-micro-batch-unset",
                "[critic] Please set at least one of 'critic.micro_batch_size' or 'critic.micro_batch_size_per_gpu'.",
                explanation="the critic is used (algorithm.adv_estimator=gae or critic.enable) and needs a "
                "micro batch size without dynamic batching",
                fixes=[
                    Fix("set the critic's per-GPU micro batch", [("critic.ppo_micro_batch_size_per_gpu", 1, False)]),
                    Fix("or train without a critic (GRPO)", [("algorithm.adv_estimator", "grpo", False)]),
                ],
            )
        if mbs is not None and per_gpu is not None:
            raise Violation(
                "critic-micro-batch-both-set",
                "[critic] You have set both 'critic.micro_batch_size' AND 'critic.micro_batch_size_per_gpu'. "
                "Please remove 'critic.micro_batch_size' because only '*_micro_batch_size_per_gpu' is "
                "supported (the former is deprecated).",
                explanation="critic.ppo_micro_batch_size is deprecated",
                fixes=[Fix("drop critic.ppo_micro_batch_size", [("critic.ppo_micro_batch_size", None, False)])],
            )
        if mbs is not None:
            mini = ctx.get("critic.ppo_mini_batch_size")
            if mini % mbs != 0:
                raise Violation(
                    "critic-mini-not-divisible-by-micro",
                    f"[critic] ppo_mini_batch_size ({mini}) must be divisible by ppo_micro_batch_size ({mbs})",
                    explanation="the deprecated global micro batch must divide the mini batch",
                )
    critic_sp = ctx.at("<0.8.0") and ctx.get("critic.strategy") in ("fsdp", "fsdp2")
    sp_on = critic_sp and ctx.opt("critic.ulysses_sequence_parallel_size", 1) > 1
    if sp_on and not ctx.opt("critic.model.use_remove_padding", False):
        raise Violation(
            "critic-ulysses-needs-remove-padding",
            "When using sequence parallelism for critic, you must enable `use_remove_padding`.",
            explanation="Ulysses splits the packed (unpadded) sequences across ranks",
            fixes=_remove_padding_fix("critic.model.use_remove_padding"),
        )


def step_critic_validate(ctx: Ctx) -> None:
    if not use_critic(ctx) or ctx.get("critic.use_dynamic_bsz"):
        return
    train = ctx.get("data.train_batch_size")
    mini = ctx.get("critic.ppo_mini_batch_size")
    if train < mini:
        raise Violation(
            "critic-train-batch-smaller-than-mini-batch",
            f"train_batch_size ({train}) must be >= critic.ppo_mini_batch_size ({mini})",
            explanation="a mini batch is a slice of the train batch",
            fixes=[
                Fix("lower critic.ppo_mini_batch_size", [("critic.ppo_mini_batch_size", "data.train_batch_size", True)])
            ],
        )
    if ctx.get("critic.strategy") in ("fsdp", "fsdp2"):
        mbs = ctx.get("critic.ppo_micro_batch_size")
        if mbs is not None:
            sp = ctx.opt("critic.ulysses_sequence_parallel_size", 1)
            n_gpus = _n_gpus(ctx)
            if mbs * sp < n_gpus:
                raise Violation(
                    "critic-micro-times-sp-below-gpus",
                    f"critic.ppo_micro_batch_size ({mbs}) * ulysses_sequence_parallel_size ({sp}) must be >= "
                    f"n_gpus ({n_gpus})",
                    explanation="the deprecated global micro batch is split over the GPUs",
                )


def step_lora(ctx: Ctx) -> None:
    if ctx.at("<0.6.1"):
        return
    if ctx.at("<0.7.1"):
        rank = ctx.opt("actor_rollout_ref.model.lora_rank", 0)
        if rank > 0 and ctx.get(f"{_R}.name") == "vllm" and not rank <= 512:
            raise Violation(
                "lora-rank-too-large-vllm",
                "LoRA rank in vLLM must be less than or equal to 512",
                "AssertionError",
                "vLLM serves LoRA adapters up to rank 512",
                fixes=[Fix("use a rank vLLM supports", [("actor_rollout_ref.model.lora_rank", 512, False)])],
            )
        return
    rank = ctx.opt("actor_rollout_ref.model.lora.rank", 0)
    if rank <= 0:
        rank = ctx.opt("actor_rollout_ref.model.lora_rank", 0)
    if ctx.opt("actor_rollout_ref.model.lora.merge", False):
        rank = 0
    if rank > 0 and ctx.get(f"{_R}.name") == "vllm":
        raise Violation(
            "lora-vllm-import",
            "validate_config imports vLLM to check the LoRA rank: without vLLM installed where the job starts "
            'it raises "vllm version None not supported"',
            "ValueError",
            "with LoRA and rollout.name=vllm, validation needs vLLM importable in the driver's environment",
        )


def step_rollout_later(ctx: Ctx) -> None:
    """What the rollout worker raises when it builds RolloutConfig (after Ray starts)."""
    if ctx.at(">=0.6.0"):
        ctx.get(f"{_R}.name")  # a '???' raises MissingMandatoryValue here
    if ctx.at(">=0.7.0") and ctx.get(f"{_R}.mode") == "sync":
        raise Violation(
            "rollout-mode-sync-removed",
            "Rollout mode 'sync' has been removed. Please set `actor_rollout_ref.rollout.mode=async` or "
            "remove the mode setting to use the default async mode.",
            explanation="verl 0.7 removed the synchronous rollout; the key still exists",
            fixes=[Fix("use the async rollout", [(f"{_R}.mode", "async", False)])],
        )


def _mini_fix(dp: str) -> list[Fix]:
    lcm = f"lcm({dp} * {_A}.ppo_micro_batch_size_per_gpu, {_R}.n)"
    return [
        Fix(
            "a mini batch whose share per rank is a multiple of the micro batch",
            [(f"{_A}.ppo_mini_batch_size", f"ceil({_A}.ppo_mini_batch_size * {_R}.n / {lcm}) * {lcm} / {_R}.n", True)],
        ),
        Fix("or a micro batch of 1", [(f"{_A}.ppo_micro_batch_size_per_gpu", 1, False)]),
    ]


def step_normalisation(ctx: Ctx) -> None:
    """The actor's mini batch per data-parallel rank, as the workers normalise it once Ray has started them:
    the legacy FSDP workers (< 0.8) assert in ``__init__``; the engine workers (0.8+) at the first update."""
    if ctx.get(f"{_A}.use_dynamic_bsz") or ctx.get(f"{_A}.strategy") not in ("fsdp", "fsdp2"):
        return
    if ctx.at(">=0.7.0,<0.8.0") and ctx.get("trainer.use_legacy_worker_impl") == "disable":
        return  # the engine workers of 0.7 check it their own way, at the first update
    n_gpus = _n_gpus(ctx)
    sp = ctx.opt(f"{_A}.ulysses_sequence_parallel_size", 1)
    dp = ctx.derive("dp_size", n_gpus // sp, "n_gpus // ulysses_sequence_parallel_size")
    mini = ctx.get(f"{_A}.ppo_mini_batch_size") * ctx.get(f"{_R}.n")
    per_gpu = ctx.get(f"{_A}.ppo_micro_batch_size_per_gpu")
    if ctx.at("<0.8.0"):
        norm = ctx.derive("normalized_mini_batch", mini // dp, "ppo_mini_batch_size * rollout.n // dp_size")
        if not norm > 0:
            raise Violation(
                "legacy-mini-batch-per-rank",
                f"ppo_mini_batch_size {norm} should be larger than 0 after normalization",
                "AssertionError",
                "each rank gets ppo_mini_batch_size x rollout.n // (GPUs / ulysses) sequences per mini batch",
                fixes=_mini_fix("dp_size"),
            )
        if per_gpu is not None and ctx.get(f"{_A}.ppo_micro_batch_size") is None and norm % per_gpu != 0:
            raise Violation(
                "legacy-mini-batch-per-rank",
                f"normalized ppo_mini_batch_size {norm} should be divisible by ppo_micro_batch_size_per_gpu {per_gpu}",
                "AssertionError",
                "the mini batch per rank is cut into micro batches of ppo_micro_batch_size_per_gpu",
                fixes=_mini_fix("dp_size"),
            )
        return
    if mini % dp != 0:
        raise Violation(
            "engine-mini-batch-per-rank",
            f"Got mini_batch_size={mini} and self.engine.get_data_parallel_size()={dp}",
            "AssertionError",
            "the engine splits each mini batch (ppo_mini_batch_size x rollout.n) evenly over the data-parallel ranks",
            fixes=_mini_fix("dp_size"),
        )
    if per_gpu is not None and (mini // dp) % per_gpu != 0:
        raise Violation(
            "engine-mini-batch-per-rank",
            "data size must be divisible by force_group_size * micro_batch_size_per_gpu",
            "AssertionError",
            "each rank's share of the mini batch is cut into micro batches of ppo_micro_batch_size_per_gpu",
            fixes=_mini_fix("dp_size"),
        )


def step_token_budget(ctx: Ctx) -> None:
    """seqlen_balancing asserts max_token_len >= the longest sequence at the first step with dynamic batching."""
    longest = ctx.get("data.max_prompt_length") + ctx.get("data.max_response_length")
    ctx.derive("max_seq_len", longest, "data.max_prompt_length + data.max_response_length")
    for _section, flag, budget in (
        (_A, f"{_A}.use_dynamic_bsz", f"{_A}.ppo_max_token_len_per_gpu"),
        (_R, f"{_R}.log_prob_use_dynamic_bsz", f"{_R}.log_prob_max_token_len_per_gpu"),
    ):
        if ctx.opt(flag, False) and ctx.opt(budget) is not None and ctx.get(budget) < longest:
            raise Violation(
                "dynamic-bsz-token-budget-too-small",
                f"max_token_len must be greater than the sequence length. Got max_token_len="
                f"{ctx.get(budget)} and max_seq_len={longest}",
                "AssertionError",
                f"with dynamic batching each micro batch holds up to {budget} tokens, and one sequence can "
                "be prompt + response long",
                fixes=[Fix(f"raise {budget}", [(budget, "data.max_prompt_length + data.max_response_length", True)])],
                keys=[budget],
            )


def _strategy_unknown(section: str, value: Any) -> Violation:
    return Violation(
        "strategy-unknown",
        "",
        "NotImplementedError",
        f"TaskRunner knows the strategies fsdp, fsdp2 and megatron; {section}.strategy={value!r} raises a "
        "bare NotImplementedError",
        fixes=[Fix("use FSDP", [(f"{section}.strategy", "fsdp", False)])],
        keys=[f"{section}.strategy"],
    )


def step_resolve(ctx: Ctx) -> None:
    """TaskRunner.run (< 0.9) prints the config with ``OmegaConf.to_container(config, resolve=True)`` before
    anything else: an interpolation whose key the overrides deleted raises there."""
    for key in list(ctx.cfg.slots):
        value, _ = ctx.cfg.resolve(key)
        if isinstance(value, Unknown) and value.missing_key is not None:
            raise Violation(
                "interpolation-key-missing",
                f"Interpolation key '{value.missing_key}' not found\n    full_key: {key}\n    object_type=dict",
                "InterpolationKeyError",
                f"{key} defaults to an interpolation of {value.missing_key}, which the overrides removed",
                keys=[key],
            )


def step_task_runner(ctx: Ctx) -> None:
    """TaskRunner.run before validation (0.4-0.7): the worker classes are chosen by strategy."""
    strategy = ctx.get(f"{_A}.strategy")
    if ctx.at("<0.6.0"):
        if strategy in ["fsdp", "fsdp2"]:
            if ctx.get("critic.strategy") not in ["fsdp", "fsdp2"]:
                raise Violation(
                    "strategy-unknown",
                    "",
                    "AssertionError",
                    "with an FSDP actor, verl 0.4-0.5 assert an FSDP critic (critic.strategy)",
                    fixes=[Fix("use FSDP for the critic too", [("critic.strategy", strategy, False)])],
                    keys=["critic.strategy"],
                )
            legacy = ctx.opt("trainer.use_legacy_worker_impl", "auto")
            if ctx.at(">=0.5.0") and legacy not in ["auto", "enable", "disable"]:
                raise Violation(
                    "strategy-unknown",
                    f"Invalid use_legacy_worker_impl: {legacy}",
                    explanation="trainer.use_legacy_worker_impl takes auto, enable or disable",
                    fixes=[Fix("use the default", [("trainer.use_legacy_worker_impl", "auto", False)])],
                    keys=["trainer.use_legacy_worker_impl"],
                )
        elif strategy == "megatron":
            if strategy != ctx.get("critic.strategy"):
                raise Violation(
                    "strategy-unknown",
                    "",
                    "AssertionError",
                    "with a Megatron actor, verl 0.4-0.5 assert a Megatron critic",
                    keys=["critic.strategy"],
                )
        else:
            raise _strategy_unknown(_A, strategy)
        if ctx.get("reward_model.enable") and ctx.get("reward_model.strategy") not in ["fsdp", "fsdp2", "megatron"]:
            raise _strategy_unknown("reward_model", ctx.get("reward_model.strategy"))
        return
    legacy = ctx.get("trainer.use_legacy_worker_impl")
    if not (ctx.at(">=0.7.0") and legacy == "disable") and strategy not in {"fsdp", "fsdp2", "megatron"}:
        raise _strategy_unknown(_A, strategy)
    critic = ctx.get("critic.strategy")
    if critic in {"fsdp", "fsdp2"}:
        if legacy not in ["auto", "enable", "disable"]:
            raise Violation(
                "strategy-unknown",
                f"Invalid use_legacy_worker_impl: {legacy}",
                explanation="trainer.use_legacy_worker_impl takes auto, enable or disable",
                fixes=[Fix("use the default", [("trainer.use_legacy_worker_impl", "auto", False)])],
                keys=["trainer.use_legacy_worker_impl"],
            )
    elif critic != "megatron":
        raise _strategy_unknown("critic", critic)


def steps(release: str) -> list[Step]:
    """The steps of ``release`` in verl's order."""
    if in_range(release, "<0.6.0"):
        return [
            step_resolve,
            step_task_runner,
            step_trainer_init,
            step_critic_need_legacy,
            step_batch_total,
            step_legacy_micro,
            step_legacy_ref_micro,
            step_rollout_micro,
            step_legacy_critic_micro,
            step_reward_model_micro,
            step_legacy_actor_batch,
            step_loss_agg_mode,
            step_legacy_critic_batch,
            step_legacy_ulysses,
            step_val_do_sample,
            step_legacy_multi_turn,
            step_normalisation,
            step_token_budget,
        ]
    out: list[Step] = [step_resolve] if in_range(release, "<0.9.0") else []
    out += [step_task_runner] if in_range(release, "<0.8.0") else []
    out += [step_batch_total, step_actor_dataclass, step_actor_validate, step_ref_rollout_micro]
    if in_range(release, "<0.7.1"):
        out.append(step_reward_model_micro)
    out += [
        step_critic_dataclass,
        step_critic_validate,
        step_val_do_sample,
        step_lora,
        step_rollout_later,
        step_normalisation,
        step_token_budget,
    ]
    return out


def run_steps(cfg: Composed) -> Iterator[tuple[Violation | None, Ctx, str | None]]:
    """Each step's outcome: (violation or None, what it read, why it was skipped)."""
    for step in steps(cfg.release):
        ctx = Ctx(cfg)
        try:
            step(ctx)
        except Violation as v:
            yield v, ctx, None
        except Skip as s:
            yield None, ctx, s.why
        except TypeError as exc:
            yield (
                Violation(
                    "config-value-type-error",
                    str(exc),
                    "TypeError",
                    "a value of the wrong type (a string where verl computes with a number)",
                ),
                ctx,
                None,
            )
        except (ArithmeticError, ValueError, AttributeError, IndexError) as exc:  # what verl's own code raises too
            yield (
                Violation("config-value-error", str(exc), type(exc).__name__, "a value verl's arithmetic cannot use"),
                ctx,
                None,
            )
        else:
            yield None, ctx, None


_ = MISSING  # re-exported for callers that test for the mandatory marker
