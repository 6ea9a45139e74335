"""Deterministic generator of verl launch configs (Hydra override lists) for the preflight oracle.

Pure Python, no verl import: the runner (run_release.py) passes in the set of keys that the
release's composed ``ppo_trainer`` config has, so that every override names a key the release
declares (or deliberately does not, for the unknown-key kinds). The same (release, keys, seed)
always gives the same list, in the same order, with the same ids.

A case is only what the generator *meant* to produce (its ``kind``); the verdict written to the
fixtures is always what verl itself did with it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# nnodes x n_gpus_per_node layouts the batch arithmetic is exercised at
LAYOUTS: tuple[tuple[int, int], ...] = ((1, 1), (1, 2), (1, 4), (1, 8), (2, 8), (4, 8))

# Dummy paths: verl's start-up validation does not open them (the runner records it if it does).
MODEL = "/nonexistent/preflight/model"
TRAIN = "/nonexistent/preflight/train.parquet"
VAL = "/nonexistent/preflight/val.parquet"
# A real tiny model (make_model.py writes it): verl opens critic.model.path during validation.
CRITIC_MODEL = "/tmp/verl-preflight-oracle/model"

A = "actor_rollout_ref.actor"
R = "actor_rollout_ref.rollout"
F = "actor_rollout_ref.ref"
C = "critic"


@dataclass
class Case:
    id: str
    kind: str
    overrides: list[str]


@dataclass
class Batch:
    """One batch-size choice: train, mini, micro per GPU, rollout.n."""

    train: int
    mini: int
    micro: int
    n: int


@dataclass
class Builder:
    """An ordered override set: key -> value, plus raw overrides appended verbatim at the end."""

    values: dict[str, str] = field(default_factory=dict)
    raw: list[str] = field(default_factory=list)

    def set(self, key: str, value: object) -> Builder:
        self.values[key] = _fmt(value)
        return self

    def drop(self, *keys: str) -> Builder:
        for k in keys:
            self.values.pop(k, None)
        return self

    def add(self, override: str) -> Builder:
        self.raw.append(override)
        return self

    def overrides(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.values.items()] + list(self.raw)


def _fmt(value: object) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def _version(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


class Generator:
    def __init__(self, release: str, keys: Iterable[str], seed: int = 18) -> None:
        self.release = release
        self.v = _version(release)
        self.keys = frozenset(keys)
        self.rng = random.Random(f"{seed}-{release}")
        self.cases: list[Case] = []
        self._counts: dict[str, int] = {}

    # ------------------------------------------------------------------ helpers
    def has(self, key: str) -> bool:
        return key in self.keys

    def emit(self, kind: str, b: Builder) -> None:
        n = self._counts.get(kind, 0) + 1
        self._counts[kind] = n
        self.cases.append(Case(id=f"{kind}-{n:03d}", kind=kind, overrides=b.overrides()))

    def valid_batch(self, dp: int) -> Batch:
        """Numbers that satisfy verl's batch arithmetic at data-parallel size ``dp``."""
        per_rank = self.rng.choice([1, 2, 4, 8])
        micro = self.rng.choice([d for d in (1, 2, 4) if per_rank % d == 0])
        total = per_rank * dp  # mini * n, normalised per rank later by verl
        n = self.rng.choice([d for d in (1, 2, 4, 8) if total % d == 0])
        mini = total // n
        train = mini * self.rng.choice([1, 2, 3, 4])
        return Batch(train=train, mini=mini, micro=micro, n=n)

    def base(self, nnodes: int, ngpus: int, b: Batch | None = None, *, critic: bool = True) -> Builder:
        """A complete config verl accepts at this layout (before the case's own change)."""
        if b is None:
            b = self.valid_batch(nnodes * ngpus)
        x = Builder()
        x.set("actor_rollout_ref.model.path", MODEL)
        x.set("data.train_files", TRAIN)
        x.set("data.val_files", VAL)
        x.set("trainer.nnodes", nnodes)
        x.set("trainer.n_gpus_per_node", ngpus)
        x.set("data.train_batch_size", b.train)
        x.set(f"{R}.n", b.n)
        x.set(f"{A}.ppo_mini_batch_size", b.mini)
        x.set(f"{A}.ppo_micro_batch_size_per_gpu", b.micro)
        x.set(f"{R}.log_prob_micro_batch_size_per_gpu", b.micro)
        x.set(f"{F}.log_prob_micro_batch_size_per_gpu", b.micro)
        x.set(f"{R}.name", "vllm")
        if critic:
            x.set(f"{C}.ppo_micro_batch_size_per_gpu", b.micro)
            if self.has("critic.model.path"):
                x.set("critic.model.path", CRITIC_MODEL)
            if (0, 7, 0) <= self.v < (0, 9, 0) and self.has("critic.model.tokenizer_path"):
                # there it defaults to actor_rollout_ref.model.path, and validate_config's critic
                # dataclass loads the tokenizer from it
                x.set("critic.model.tokenizer_path", CRITIC_MODEL)
        x.set("trainer.logger", "console")
        return x

    def layouts(self, k: int, *, min_gpus: int = 1) -> list[tuple[int, int]]:
        """``k`` layouts with at least ``min_gpus`` GPUs, cycling through LAYOUTS in order."""
        pool = [lay for lay in LAYOUTS if lay[0] * lay[1] >= min_gpus]
        return [pool[i % len(pool)] for i in range(k)]

    def grpo(self, x: Builder) -> Builder:
        return x.set("algorithm.adv_estimator", "grpo").drop(f"{C}.ppo_micro_batch_size_per_gpu")

    # ------------------------------------------------------------------ kinds
    def gen_valid(self) -> None:
        for nn, ng in self.layouts(24):
            self.emit("valid", self.base(nn, ng))
        for nn, ng in self.layouts(12):
            self.emit("valid_grpo_no_critic", self.grpo(self.base(nn, ng)))
        for nn, ng in self.layouts(6):
            x = self.base(nn, ng).set("algorithm.adv_estimator", "grpo").set(f"{A}.use_kl_loss", True)
            self.emit("valid_grpo_kl_loss", x)

    def gen_batch_not_divisible(self) -> None:
        for nn, ng in self.layouts(20, min_gpus=2):
            dp = nn * ng
            b = self.valid_batch(dp)
            # train * n not a multiple of dp, mini kept <= train
            n = self.rng.choice([1, 1, 3])
            train = self.rng.choice([t for t in range(1, 4 * dp) if (t * n) % dp != 0])
            mini = max(1, min(train, b.mini))
            b = Batch(train=train, mini=mini, micro=1, n=n)
            self.emit("train_batch_not_divisible_by_gpus", self.base(nn, ng, b))

    def gen_train_lt_mini(self) -> None:
        for nn, ng in self.layouts(12):
            dp = nn * ng
            b = self.valid_batch(dp)
            b = Batch(train=max(dp, 1), mini=b.mini, micro=b.micro, n=b.n)
            if b.train >= b.mini:
                b.mini = b.train * 2
            self.emit("train_batch_lt_mini_batch", self.base(nn, ng, b))

    def gen_mini_not_dividing_train(self) -> None:
        for nn, ng in self.layouts(10):
            dp = nn * ng
            b = self.valid_batch(dp)
            b.train = b.mini * 2 + dp if (b.mini * 2 + dp) % b.mini else b.mini * 3 + dp
            self.emit("mini_batch_not_dividing_train_batch", self.base(nn, ng, b))

    def gen_mini_per_rank_zero(self) -> None:
        for nn, ng in self.layouts(12, min_gpus=4):
            dp = nn * ng
            # mini * n < dp: nothing left per rank after verl's normalisation
            mini = self.rng.choice([m for m in (1, 2, 3) if m < dp])
            b = Batch(train=dp * 2, mini=mini, micro=1, n=1)
            self.emit("mini_batch_per_rank_below_one", self.base(nn, ng, b))

    def gen_micro_not_dividing(self) -> None:
        for nn, ng in self.layouts(12):
            dp = nn * ng
            per_rank = self.rng.choice([3, 4, 6])
            micro = {3: 2, 4: 3, 6: 4}[per_rank]
            b = Batch(train=per_rank * dp * 2, mini=per_rank * dp, micro=micro, n=1)
            x = self.base(nn, ng, b)
            self.emit("micro_batch_not_dividing_mini_per_rank", x)

    def gen_micro_missing_and_both(self) -> None:
        roles = [
            ("actor", f"{A}.ppo_micro_batch_size", f"{A}.ppo_micro_batch_size_per_gpu", {}),
            ("rollout", f"{R}.log_prob_micro_batch_size", f"{R}.log_prob_micro_batch_size_per_gpu", {}),
            ("ref_kl_loss", f"{F}.log_prob_micro_batch_size", f"{F}.log_prob_micro_batch_size_per_gpu",
             {f"{A}.use_kl_loss": True}),
            ("ref_kl_in_reward", f"{F}.log_prob_micro_batch_size", f"{F}.log_prob_micro_batch_size_per_gpu",
             {"algorithm.use_kl_in_reward": True}),
            ("ref_no_kl", f"{F}.log_prob_micro_batch_size", f"{F}.log_prob_micro_batch_size_per_gpu", {}),
            ("critic_gae", f"{C}.ppo_micro_batch_size", f"{C}.ppo_micro_batch_size_per_gpu", {}),
            ("critic_grpo", f"{C}.ppo_micro_batch_size", f"{C}.ppo_micro_batch_size_per_gpu",
             {"algorithm.adv_estimator": "grpo"}),
        ]
        for role, old, new, extra in roles:
            for nn, ng in self.layouts(4):
                x = self.base(nn, ng)
                for k, v in extra.items():
                    x.set(k, v)
                x.drop(new)
                self.emit(f"micro_batch_unset_{role}", x)
            for nn, ng in self.layouts(3):
                b = self.valid_batch(nn * ng)
                x = self.base(nn, ng, b)
                for k, v in extra.items():
                    x.set(k, v)
                x.set(old, b.micro * nn * ng)
                self.emit(f"micro_batch_set_twice_{role}", x)

    def gen_deprecated_micro(self) -> None:
        # only the deprecated (global) micro batch: verl normalises / checks it differently
        for role, old, new in (
            ("actor", f"{A}.ppo_micro_batch_size", f"{A}.ppo_micro_batch_size_per_gpu"),
            ("critic", f"{C}.ppo_micro_batch_size", f"{C}.ppo_micro_batch_size_per_gpu"),
        ):
            for nn, ng in self.layouts(4):
                dp = nn * ng
                b = self.valid_batch(dp)
                x = self.base(nn, ng, b).drop(new).set(old, b.mini * b.n)
                self.emit(f"deprecated_micro_valid_{role}", x)
            for nn, ng in self.layouts(4):
                dp = nn * ng
                b = Batch(train=dp * 8, mini=dp * 4, micro=1, n=1)
                x = self.base(nn, ng, b).drop(new).set(old, dp * 4 - 1 if dp * 4 > 2 else 3)
                self.emit(f"deprecated_micro_not_dividing_mini_{role}", x)
            for nn, ng in self.layouts(4, min_gpus=4):
                dp = nn * ng
                b = Batch(train=dp * 4, mini=dp * 2, micro=1, n=1)
                x = self.base(nn, ng, b).drop(new).set(old, 2)
                self.emit(f"deprecated_micro_below_gpus_{role}", x)

    def gen_dynamic_bsz(self) -> None:
        for nn, ng in self.layouts(8):
            x = self.base(nn, ng).set(f"{A}.use_dynamic_bsz", True)
            self.emit("dynamic_bsz_valid", x)
        for nn, ng in self.layouts(6):
            x = self.base(nn, ng).set(f"{A}.use_dynamic_bsz", True)
            x.drop(f"{A}.ppo_micro_batch_size_per_gpu", f"{R}.log_prob_micro_batch_size_per_gpu",
                   f"{F}.log_prob_micro_batch_size_per_gpu")
            if self.has("critic.use_dynamic_bsz"):
                x.set("critic.use_dynamic_bsz", True)
            x.drop(f"{C}.ppo_micro_batch_size_per_gpu")
            self.emit("dynamic_bsz_micro_unset", x)
        for nn, ng in self.layouts(8, min_gpus=2):
            dp = nn * ng
            train = self.rng.choice([t for t in range(1, 4 * dp) if t % dp != 0])
            b = Batch(train=train, mini=max(1, train // 2), micro=1, n=1)
            x = self.base(nn, ng, b).set(f"{A}.use_dynamic_bsz", True)
            self.emit("dynamic_bsz_train_batch_not_divisible", x)
        for nn, ng in self.layouts(6):
            x = self.base(nn, ng).set(f"{A}.use_dynamic_bsz", True)
            x.set("data.max_prompt_length", 1024).set("data.max_response_length", 1024)
            x.set(f"{A}.ppo_max_token_len_per_gpu", self.rng.choice([256, 1000, 2047]))
            self.emit("dynamic_bsz_token_budget_below_prompt_plus_response", x)
        for nn, ng in self.layouts(4):
            x = self.base(nn, ng).set(f"{A}.use_dynamic_bsz", True)
            x.set("data.max_prompt_length", 1024).set("data.max_response_length", 1024)
            x.set(f"{A}.ppo_max_token_len_per_gpu", 4096)
            self.emit("dynamic_bsz_token_budget_ok", x)
        if self.has("critic.ppo_max_token_len_per_gpu"):
            for nn, ng in self.layouts(4):
                x = self.base(nn, ng).set(f"{A}.use_dynamic_bsz", True).set("critic.use_dynamic_bsz", True)
                x.set("data.max_prompt_length", 1024).set("data.max_response_length", 1024)
                x.set("critic.ppo_max_token_len_per_gpu", 1500)
                self.emit("dynamic_bsz_critic_token_budget_below_prompt_plus_response", x)

    def gen_ulysses(self) -> None:
        for nn, ng in self.layouts(6, min_gpus=2):
            dp = nn * ng
            sp = 2
            b = self.valid_batch(dp // sp)
            x = self.base(nn, ng, b).set(f"{A}.ulysses_sequence_parallel_size", sp)
            self.emit("ulysses_valid", x)
        for nn, ng in self.layouts(6):
            dp = nn * ng
            sp = self.rng.choice([s for s in (3, 5, 16, 64) if dp % s != 0])
            x = self.base(nn, ng).set(f"{A}.ulysses_sequence_parallel_size", sp)
            self.emit("ulysses_not_dividing_gpus", x)
        for target in (A, F, C):
            key = f"{target}.ulysses_sequence_parallel_size"
            if target == F and not self.has(key):
                continue
            for nn, ng in self.layouts(3, min_gpus=2):
                x = self.base(nn, ng).set(key, 2)
                pad = "critic.model.use_remove_padding" if target == C else "actor_rollout_ref.model.use_remove_padding"
                x.set(pad, False)
                self.emit(f"ulysses_without_remove_padding_{target.split('.')[-1]}", x)

    def megatron_switch(self) -> list[str] | None:
        """The Hydra override that puts the megatron actor/ref/critic under ppo_trainer, if any."""
        if self.has("model_engine") or self.v >= (0, 8, 0):
            return ["model_engine=megatron"]
        if self.v >= (0, 5, 0):
            # critic's default is 'critic@critic': Hydra addresses it as plain 'critic'
            return ["actor@actor_rollout_ref.actor=megatron_actor", "ref@actor_rollout_ref.ref=megatron_ref",
                    "critic=megatron_critic"]
        return None

    def gen_megatron(self) -> None:
        sw = self.megatron_switch()
        if sw is None:
            return
        meg = f"{A}.megatron"
        for nn, ng in self.layouts(18, min_gpus=2):
            dp_total = nn * ng
            kind = self.rng.choice(["valid", "tp", "pp", "cp"])
            tp = pp = cp = 1
            if kind == "valid":
                tp = self.rng.choice([t for t in (1, 2, 4) if dp_total % t == 0])
                pp = self.rng.choice([p for p in (1, 2) if dp_total % (tp * p) == 0])
            elif kind == "tp":
                tp = self.rng.choice([t for t in (3, 5, 6) if dp_total % t != 0])
            elif kind == "pp":
                pp = self.rng.choice([p for p in (3, 5, 7) if dp_total % p != 0])
            else:
                cp = self.rng.choice([c for c in (3, 5) if dp_total % c != 0])
            if kind == "valid":
                dp = dp_total // (tp * pp * cp)
                b = self.valid_batch(dp)
            else:
                b = self.valid_batch(dp_total)
            x = self.base(nn, ng, b)
            for o in sw:
                x.add(o)
            x.set(f"{meg}.tensor_model_parallel_size", tp)
            x.set(f"{meg}.pipeline_model_parallel_size", pp)
            x.set(f"{meg}.context_parallel_size", cp)
            self.emit(f"megatron_{kind}" if kind == "valid" else f"megatron_{kind}_not_dividing_gpus", x)
        for nn, ng in self.layouts(4, min_gpus=4):
            # megatron dp x micro does not divide train x n
            dp = nn * ng // 2
            b = Batch(train=dp * 2 + 1, mini=dp, micro=2, n=1)
            x = self.base(nn, ng, b)
            for o in sw:
                x.add(o)
            x.set(f"{meg}.tensor_model_parallel_size", 2)
            self.emit("megatron_batch_not_divisible_by_dp_times_micro", x)
        for nn, ng in self.layouts(3):
            x = self.base(nn, ng).set(f"{A}.strategy", "megatron")
            self.emit("megatron_strategy_on_fsdp_config", x)

    def gen_enums(self) -> None:
        modes = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm",
                 "token-sum", "bogus", "mean", "seq-mean"]
        for i, mode in enumerate(modes):
            nn, ng = LAYOUTS[i % len(LAYOUTS)]
            self.emit("loss_agg_mode_value", self.base(nn, ng).set(f"{A}.loss_agg_mode", mode))
        if self.has("critic.loss_agg_mode"):
            for i, mode in enumerate(["token-mean", "bogus"]):
                nn, ng = LAYOUTS[i]
                self.emit("critic_loss_agg_mode_value", self.base(nn, ng).set("critic.loss_agg_mode", mode))
        ests = ["gae", "grpo", "rloo", "reinforce_plus_plus", "remax", "grpo_passk", "opo", "gpg",
                "reinforce_plus_plus_baseline", "bogus", "ppo", "GRPO"]
        for i, est in enumerate(ests):
            nn, ng = LAYOUTS[i % len(LAYOUTS)]
            x = self.base(nn, ng).set("algorithm.adv_estimator", est)
            self.emit("adv_estimator_value", x)
            if est != "gae":
                self.emit("adv_estimator_value_no_critic_micro", self.base(nn, ng).set(
                    "algorithm.adv_estimator", est).drop(f"{C}.ppo_micro_batch_size_per_gpu"))
        if self.has(f"{R}.mode"):
            for i, mode in enumerate(["sync", "async", "bogus"]):
                nn, ng = LAYOUTS[i]
                self.emit("rollout_mode_value", self.base(nn, ng).set(f"{R}.mode", mode))
        for i, name in enumerate(["vllm", "sglang", "hf", "bogus"]):
            nn, ng = LAYOUTS[i]
            self.emit("rollout_name_value", self.base(nn, ng).set(f"{R}.name", name))
        for nn, ng in self.layouts(2):
            self.emit("rollout_name_unset", self.base(nn, ng).drop(f"{R}.name"))
        for i, strat in enumerate(["fsdp2", "bogus"]):
            nn, ng = LAYOUTS[i]
            x = self.base(nn, ng).set(f"{A}.strategy", strat)
            self.emit("actor_strategy_value", x)
            self.emit("critic_strategy_value", self.base(nn, ng).set(f"{C}.strategy", strat))
        for i, tp in enumerate([1, 3, 16]):
            nn, ng = LAYOUTS[i + 1]
            self.emit("rollout_tp_value", self.base(nn, ng).set(f"{R}.tensor_model_parallel_size", tp))

    def gen_val_kwargs(self) -> None:
        for nn, ng in self.layouts(4):
            x = self.base(nn, ng).set(f"{R}.val_kwargs.do_sample", True).set(f"{R}.temperature", 0)
            self.emit("val_do_sample_temperature_zero", x)
        for nn, ng in self.layouts(3):
            x = self.base(nn, ng).set(f"{R}.val_kwargs.do_sample", True).set(f"{R}.temperature", 0.7)
            self.emit("val_do_sample_temperature_positive", x)
        for nn, ng in self.layouts(2):
            x = self.base(nn, ng).set(f"{R}.val_kwargs.do_sample", True).set(f"{R}.val_kwargs.temperature", 0)
            self.emit("val_do_sample_val_temperature_zero", x)

    def gen_critic_batches(self) -> None:
        if self.has("critic.model.path"):
            for nn, ng in self.layouts(3):
                self.emit("critic_model_path_missing", self.base(nn, ng).set("critic.model.path", MODEL))
            for nn, ng in self.layouts(2):
                x = self.grpo(self.base(nn, ng)).set("critic.model.path", MODEL)
                self.emit("critic_model_path_missing_no_critic", x)
        for nn, ng in self.layouts(6):
            dp = nn * ng
            b = self.valid_batch(dp)
            x = self.base(nn, ng, b).set(f"{C}.ppo_mini_batch_size", b.train * 2)
            self.emit("critic_train_batch_lt_mini_batch", x)
        for nn, ng in self.layouts(6):
            dp = nn * ng
            b = Batch(train=dp * 8, mini=dp * 4, micro=1, n=1)
            x = self.base(nn, ng, b).set(f"{C}.ppo_micro_batch_size_per_gpu", 3)
            self.emit("critic_micro_not_dividing_mini_per_rank", x)
        for nn, ng in self.layouts(4, min_gpus=4):
            dp = nn * ng
            b = Batch(train=dp * 2, mini=dp, micro=1, n=1)
            x = self.base(nn, ng, b).set(f"{C}.ppo_mini_batch_size", 2)
            self.emit("critic_mini_batch_per_rank_below_one", x)

    def gen_reward_model(self) -> None:
        if not self.has("reward_model.enable"):
            return
        for nn, ng in self.layouts(3):
            x = self.base(nn, ng).set("reward_model.enable", True)
            if self.has("reward_model.model.path"):
                x.set("reward_model.model.path", MODEL)
            self.emit("reward_model_micro_unset", x)
        if self.has("reward_model.micro_batch_size_per_gpu"):
            for nn, ng in self.layouts(3):
                x = self.base(nn, ng).set("reward_model.enable", True)
                if self.has("reward_model.model.path"):
                    x.set("reward_model.model.path", MODEL)
                x.set("reward_model.micro_batch_size_per_gpu", 1)
                self.emit("reward_model_micro_set", x)

    def gen_types(self) -> None:
        wrong: list[tuple[str, str]] = [
            ("data.train_batch_size", "abc"),
            (f"{R}.n", "two"),
            (f"{A}.ppo_mini_batch_size", "abc"),
            ("trainer.n_gpus_per_node", "eight"),
            ("trainer.nnodes", "one"),
            (f"{A}.ppo_micro_batch_size_per_gpu", "abc"),
            (f"{R}.log_prob_micro_batch_size_per_gpu", "x"),
            (f"{C}.ppo_micro_batch_size_per_gpu", "one"),
            (f"{R}.temperature", "hot"),
            (f"{A}.use_dynamic_bsz", "maybe"),
            (f"{A}.ppo_mini_batch_size", "2.5"),
            ("data.train_batch_size", "8.0"),
            (f"{A}.ulysses_sequence_parallel_size", "two"),
            (f"{A}.use_kl_loss", "yes_please"),
            (f"{A}.clip_ratio", "big"),
            (f"{A}.ppo_epochs", "abc"),
            ("data.max_prompt_length", "long"),
        ]
        for i, (key, val) in enumerate(wrong):
            if not self.has(key):
                continue
            nn, ng = LAYOUTS[i % len(LAYOUTS)]
            self.emit("wrong_type", self.base(nn, ng).set(key, val))
        # numbers given as quoted strings (a YAML string where an int is expected)
        for i, key in enumerate(["data.train_batch_size", f"{A}.ppo_mini_batch_size"]):
            nn, ng = LAYOUTS[i]
            x = self.base(nn, ng)
            x.set(key, f"'{x.values[key]}'")
            self.emit("wrong_type_quoted_number", x)

    def gen_hydra(self) -> None:
        unknown = [
            "trainer.nnode=2",
            "data.cache_dir=/tmp/x",
            f"{A}.ppo_micro_bsz=2",
            "trainer.wandb_proxy=http://x:1",
            f"{R}.gpu_memory_util=0.5",
            "algorithm.kl_coef=0.1",
            "trainer.n_gpus=8",
            f"{A}.optim.learning_rate=1e-6",
        ]
        for i, o in enumerate(unknown):
            nn, ng = LAYOUTS[i % len(LAYOUTS)]
            self.emit("unknown_key", self.base(nn, ng).add(o))
        # keys that moved between releases: known in some, unknown in others
        moved = [
            "ray_init.num_cpus=16",
            "ray_kwargs.ray_init.num_cpus=16",
            "critic.model.fsdp_config.param_offload=True",
            "critic.fsdp.param_offload=True",
            f"{A}.fsdp_config.param_offload=True",
            "reward_model.enable=False",
            "reward.reward_model.enable=False",
            "custom_reward_function.path=null",
            f"{R}.mode=async",
            "trainer.use_legacy_worker_impl=auto",
            "trainer.use_v1=False",
            "ray_init.timeline_json_file=/tmp/t.json",
            "ray_kwargs.timeline_json_file=/tmp/t.json",
            f"{A}.use_torch_compile=False",
            "actor_rollout_ref.model.lora.rank=0",
            "data.return_raw_chat=True",
            "trainer.npu_profile.options.level=level1",
            "global_profiler.tool=null",
            f"{R}.multi_turn.enable=False",
            f"{A}.policy_loss.loss_mode=vanilla",
        ]
        for i, o in enumerate(moved):
            nn, ng = LAYOUTS[i % len(LAYOUTS)]
            self.emit("renamed_or_moved_key", self.base(nn, ng).add(o))
        for i, o in enumerate(["+trainer.nnode=2", "+data.cache_dir=/tmp/x", "++trainer.total_epochs=1"]):
            nn, ng = LAYOUTS[i]
            self.emit("plus_new_key", self.base(nn, ng).add(o))
        for i, o in enumerate(["+trainer.val_before_train=False", "+data.train_batch_size=8"]):
            nn, ng = LAYOUTS[i]
            self.emit("plus_existing_key", self.base(nn, ng).add(o))
        grammar = [
            "data.max_prompt_length==4",
            "trainer.logger=[console,wandb",
            f"{A}.optim.lr=1e-6,2e-6",
            "trainer.experiment_name=qwen-grpo(lr=1e-6)",
            "trainer.experiment_name='unterminated",
            "trainer.project_name=a b",
            "=value",
        ]
        for i, o in enumerate(grammar):
            nn, ng = LAYOUTS[i % len(LAYOUTS)]
            self.emit("override_grammar", self.base(nn, ng).add(o))
        for i, o in enumerate(["trainer.logger=[console,wandb]", "trainer.logger=['console']",
                               "trainer.experiment_name='qwen-grpo(lr=1e-6)'"]):
            nn, ng = LAYOUTS[i]
            self.emit("override_grammar_ok", self.base(nn, ng).add(o))
        for i, o in enumerate(["~trainer.nnodes", f"~{R}.n", "~data.train_batch_size"]):
            nn, ng = LAYOUTS[i]
            self.emit("delete_key", self.base(nn, ng).add(o))
        # node replaced by a scalar / a dict given where a scalar is expected
        for i, o in enumerate([f"{A}.optim=adam", "trainer.nnodes={a:1}", f"{A}.checkpoint=null"]):
            nn, ng = LAYOUTS[i]
            self.emit("wrong_node_type", self.base(nn, ng).add(o))

    def generate(self) -> list[Case]:
        steps: list[Callable[[], None]] = [
            self.gen_valid, self.gen_batch_not_divisible, self.gen_train_lt_mini,
            self.gen_mini_not_dividing_train, self.gen_mini_per_rank_zero, self.gen_micro_not_dividing,
            self.gen_micro_missing_and_both, self.gen_deprecated_micro, self.gen_dynamic_bsz,
            self.gen_ulysses, self.gen_megatron, self.gen_enums, self.gen_val_kwargs,
            self.gen_critic_batches, self.gen_reward_model, self.gen_types, self.gen_hydra,
        ]
        for step in steps:
            step()
        return self.cases


def generate(release: str, keys: Iterable[str], seed: int = 18) -> list[Case]:
    """All cases for ``release``; ``keys`` are the dotted keys of its composed ppo_trainer config."""
    return Generator(release, keys, seed).generate()
