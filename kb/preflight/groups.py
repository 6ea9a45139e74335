"""Hydra config-group choices on the command line (``model_engine=megatron``, ``actor@actor_rollout_ref.actor=
megatron_actor``): they swap a section of the release's config for another file, here the Megatron trainer's key
set of that release (``kb/data/verl_keys/ppo_megatron_trainer-<V>.json``, shipped from 0.5.0)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kb.keysets import release_keys
from kb.versions import in_range

_GROUP = re.compile(r"^(?P<group>[A-Za-z_][\w/]*)(?:@(?P<package>[A-Za-z_][\w.]*))?=(?P<option>[\w.-]+)$")
#: the default-list groups of ppo_trainer.yaml whose Megatron option has a key set here, and the section each fills
_SECTIONS = {"actor": "actor_rollout_ref.actor", "ref": "actor_rollout_ref.ref", "critic": "critic"}
#: verl 0.7.1's config/model_engine/ options (Megatron came as an engine in 0.8.0)
_MODEL_ENGINES_0_7_1 = ("dp", "torchtitan", "veomni")
_MEGATRON_SECTIONS = ("actor_rollout_ref.actor", "actor_rollout_ref.ref", "critic")


@dataclass(frozen=True)
class GroupChoice:
    text: str
    group: str
    package: str | None
    option: str
    #: Hydra's refusal, when the choice names no entry of the defaults list or no option of the group
    error: str | None = None
    check: str = "hydra-key-not-in-struct"


def group_choice(text: str, release: str) -> GroupChoice | None:
    """The override as a config-group choice of ``release``, or None when it is an ordinary override."""
    m = _GROUP.match(text.strip())
    if m is None:
        return None
    group, package, option = m["group"], m["package"], m["option"]
    if group in _SECTIONS and in_range(release, ">=0.5.0"):
        if package == group:
            # the defaults entry critic@critic is keyed by its group alone (its package is the default one)
            error = (
                f"Could not override '{group}@{package}'.\nDid you mean to override {group}?\n"
                f"To append to your default list use +{text.strip()}"
            )
            return GroupChoice(text, group, package, option, error)
        if package is None and group == "critic":
            return GroupChoice(text, group, "critic", option)
        if package is not None:
            return GroupChoice(text, group, package, option)
    if package is None and group == "model_engine" and in_range(release, ">=0.7.1"):
        options = _MODEL_ENGINES_0_7_1 if in_range(release, "<0.8.0") else None
        if options is not None and option not in options:
            listed = "".join(f"\n\t{o}" for o in options)
            error = (
                f"In 'ppo_trainer': Could not find 'model_engine/{option}'\n\n"
                f"Available options in 'model_engine':{listed}"
            )
            return GroupChoice(text, group, None, option, error, "hydra-group-option-missing")
        return GroupChoice(text, group, None, option)
    return None


def base_keys(release: str, choices: list[GroupChoice]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The key set the choices compose to, and notes on the choices it could not follow."""
    keys = dict(release_keys(release))
    notes: list[str] = []
    mega = release_keys(release, "ppo_megatron_trainer")
    for choice in choices:
        if choice.error is not None:
            continue
        if not choice.option.startswith("megatron"):
            notes.append(f"{choice.text}: verl-doctor has no key set for this choice; the default section is checked")
            continue
        sections = _MEGATRON_SECTIONS if choice.group == "model_engine" else (choice.package or "",)
        for section in sections:
            for key in [k for k in keys if k == section or k.startswith(section + ".")]:
                del keys[key]
            keys.update({k: v for k, v in mega.items() if k == section or k.startswith(section + ".")})
    return keys, notes
