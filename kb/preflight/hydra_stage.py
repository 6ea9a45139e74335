"""What Hydra itself refuses while it composes the overrides, in Hydra's order: every override's grammar first,
then sweeps (a comma list without --multirun), then each override applied in turn (a key the YAML lacks, '+' on a
key it has, '~' of nothing). The per-override verdicts are check-overrides' (:mod:`kb.overrides`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kb.keysets import release_keys
from kb.overrides import OverrideVerdict, parse_override

#: keys whose Hydra error a corpus entry describes by name (else the generic struct-error entry)
_KEY_ENTRIES: tuple[tuple[str, str], ...] = (
    ("ray_init.", "ray-init-num-cpus-renamed"),
    ("trainer.nnode", "trainer-nnode-typo"),
    ("data.cache_dir", "data-cache-dir-needs-plus"),
    ("trainer.wandb_proxy", "wandb-proxy"),
    ("critic.model.fsdp_config", "critic-fsdp-config-renamed"),
    ("actor_rollout_ref.actor.optim.warmup_style", "warmup-style-renamed-lr-scheduler-type"),
    ("critic.optim.warmup_style", "warmup-style-renamed-lr-scheduler-type"),
    ("reward_model.", "reward-config-moved"),
    ("custom_reward_function.", "reward-config-moved"),
)


@dataclass
class HydraProblem:
    index: int  # position of the override in the input
    phase: int  # 0 grammar, 1 sweep, 2 application
    check: str
    message: str
    exception: str
    verdict: OverrideVerdict
    entry: str


def entry_for_key(key: str, default: str = "hydra-override-key-not-in-struct") -> str:
    for prefix, entry in _KEY_ENTRIES:
        if (
            key == prefix
            or key.startswith(prefix if prefix.endswith(".") else prefix + ".")
            or key == prefix.rstrip(".")
        ):
            return entry
    return default


def hydra_problems(
    verdicts: list[OverrideVerdict], release: str, keys: dict[str, dict[str, Any]] | None = None
) -> list[HydraProblem]:
    """The overrides Hydra refuses, in the order Hydra raises them (``keys``: the composed key set, when
    config-group choices changed the release's own)."""
    keys = keys if keys is not None else release_keys(release)
    out: list[HydraProblem] = []
    for i, v in enumerate(verdicts):
        parsed = parse_override(v.text)
        prefix = parsed.prefix if parsed else ""
        if v.status == "malformed" and v.text.strip().startswith("="):
            # '=value' parses as a choice for the config group '' of the defaults list
            out.append(
                HydraProblem(
                    i,
                    2,
                    "hydra-key-not-in-struct",
                    f"Could not override ''. No match in the defaults list.\nTo append to your "
                    f"default list use +{v.text.strip()}",
                    "ConfigCompositionException",
                    v,
                    "hydra-override-key-not-in-struct",
                )
            )
        elif v.status == "malformed":
            out.append(
                HydraProblem(
                    i,
                    0,
                    "hydra-override-grammar",
                    f"Error parsing override '{v.text}'\n{v.message}",
                    "OverrideParseException",
                    v,
                    "hydra-override-grammar-error",
                )
            )
        elif v.status == "bad_value" and v.message.startswith("Hydra cannot parse it"):
            detail = v.message.split(": ", 1)[1] if ": " in v.message else v.message
            # Hydra prints the parser's own words for a syntax error, and a header before an evaluation error
            text = f"Error parsing override '{v.text}'\n{detail}" if detail.startswith("HydraException") else detail
            out.append(
                HydraProblem(
                    i, 0, "hydra-override-grammar", text, "OverrideParseException", v, "hydra-override-grammar-error"
                )
            )
        elif v.status == "bad_value" and "as a sweep" in v.message:
            out.append(
                HydraProblem(
                    i,
                    1,
                    "hydra-sweep-without-multirun",
                    f"Ambiguous value for argument '{v.text}'\n1. To use it as a list, use key=[value1,value2]",
                    "ConfigCompositionException",
                    v,
                    "hydra-comma-value-ambiguous",
                )
            )
        elif prefix == "~" and v.status == "unknown":
            out.append(
                HydraProblem(
                    i,
                    2,
                    "hydra-delete-missing-key",
                    f"Could not delete from config. '{v.key}' does not exist.",
                    "ConfigCompositionException",
                    v,
                    "hydra-override-key-not-in-struct",
                )
            )
        elif v.status == "remove_plus":
            out.append(
                HydraProblem(
                    i,
                    2,
                    "hydra-append-existing-key",
                    f"Could not append to config. An item is already at '{v.key}'.",
                    "ConfigCompositionException",
                    v,
                    "hydra-append-existing-key",
                )
            )
        elif prefix == "" and v.key not in keys and v.status in ("unknown", "ignored", "needs_plus"):
            out.append(
                HydraProblem(
                    i,
                    2,
                    "hydra-key-not-in-struct",
                    f"Could not override '{v.key}'.\nTo append to your config use +{v.text}",
                    "ConfigCompositionException",
                    v,
                    entry_for_key(v.key),
                )
            )
    out.sort(key=lambda p: (p.phase, p.index))
    return out
