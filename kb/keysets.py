"""What each verl release's trainer config accepts, and what verl really reads.

Two data sources: the key set extracted from each release wheel (``data/verl_keys``, made by
``scripts/extract_verl_keys.py``) and the hand-kept notes (``data/verl_key_notes.yaml``) on keys read
through ``config.get`` (they need Hydra's ``+``), pass-through maps, ignored keys and renames.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Literal

import yaml

from kb.versions import KNOWN_RELEASES, in_range, nearest_release


class KeyStatus(enum.Enum):
    PRESENT = "present"  # in the release's YAML: write key=value
    PLUS = "plus"  # absent from the YAML but read by verl: write +key=value
    IGNORED = "ignored"  # accepted but no code reads it in this release
    UNKNOWN = "unknown"  # neither in the YAML nor read by verl


@dataclass(frozen=True)
class KeyInfo:
    key: str
    version: str
    status: KeyStatus
    kind: str | None = None  # the YAML node kind when present (int, str, open_map, ...)
    use_instead: str | None = None  # for ignored keys: the key that takes effect
    why: str | None = None

    @property
    def prefix(self) -> str:
        return "+" if self.status is KeyStatus.PLUS else ""


@dataclass(frozen=True)
class Rename:
    old: str
    new: str
    since: str
    prefix: bool = False
    deprecated: bool = False
    typo: bool = False  # never a key: a common misspelling of 'new'

    def applies_to(self, key: str) -> bool:
        return key == self.old or (self.prefix and key.startswith(self.old + "."))

    def translate(self, key: str) -> str:
        return self.new + key[len(self.old) :] if self.prefix else self.new


def _data_text(*parts: str) -> str:
    return resources.files("kb").joinpath("data", *parts).read_text(encoding="utf-8")


#: The two trainer configs verl ships: FSDP's (the default) and Megatron's, whose examples launch with
#: ``--config-name=ppo_megatron_trainer`` and whose actor, ref and critic sections have other keys.
TrainerConfig = Literal["ppo_trainer", "ppo_megatron_trainer"]
_CONFIG: ContextVar[TrainerConfig] = ContextVar("verl_trainer_config", default="ppo_trainer")


def trainer_config_of(config_name: str | None) -> TrainerConfig | None:
    """The shipped config a ``--config-name`` value names, or None (none given, or the user's own)."""
    if config_name is None:
        return None
    name = config_name.rsplit("/", 1)[-1].removesuffix(".yaml")
    return name if name in ("ppo_trainer", "ppo_megatron_trainer") else None  # type: ignore[return-value]


@contextmanager
def trainer_config(config: TrainerConfig) -> Iterator[None]:
    """Inside the block every key lookup reads ``config``'s key set: one check of a Megatron launch sees
    Megatron's sections throughout (its did-you-means and value checks included), not FSDP's."""
    token = _CONFIG.set(config)
    try:
        yield
    finally:
        _CONFIG.reset(token)


def release_keys(version: str, config: TrainerConfig | None = None) -> dict[str, dict[str, Any]]:
    """The key → {kind, default} map of a known release's trainer config (the one in effect by default)."""
    return _release_keys(version, config or _CONFIG.get())


@cache
def _release_keys(version: str, config: TrainerConfig) -> dict[str, dict[str, Any]]:
    if version not in KNOWN_RELEASES:
        raise KeyError(f"no key set for verl {version}")
    payload = json.loads(_data_text("verl_keys", f"{config}-{version}.json"))
    keys: dict[str, dict[str, Any]] = payload["keys"]
    return keys


@lru_cache(maxsize=1)
def key_notes() -> dict[str, Any]:
    # libyaml's loader where PyYAML has it: the pure-Python one takes ~80 ms on this file, most of a cold preflight
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    notes: dict[str, Any] = yaml.load(_data_text("verl_key_notes.yaml"), Loader=loader)
    return notes


@lru_cache(maxsize=1)
def renames() -> tuple[Rename, ...]:
    return tuple(
        Rename(
            old=r["old"],
            new=r["new"],
            since=str(r["since"]),
            prefix=bool(r.get("prefix", False)),
            deprecated=bool(r.get("deprecated", False)),
            typo=bool(r.get("typo", False)),
        )
        for r in key_notes()["renames"]
    )


def _under(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(prefix + ".")


def _ignored_note(key: str, version: str) -> dict[str, Any] | None:
    for note in key_notes()["ignored"]:
        target = note.get("key") or note["prefix"]
        hit = key == target if "key" in note else _under(key, target)
        if hit and in_range(version, note["verl"]):
            return dict(note)
    return None


def _open_map_parent(key: str, version: str, keys: dict[str, dict[str, Any]]) -> str | None:
    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:i])
        if keys.get(parent, {}).get("kind") == "open_map":
            return parent
    for note in key_notes()["open_maps"]:
        if key.startswith(note["prefix"] + ".") and in_range(version, note["verl"]):
            return str(note["prefix"])
    return None


def _plus_note(key: str, version: str) -> dict[str, Any] | None:
    for note in key_notes()["plus_keys"]:
        if note["key"] == key and in_range(version, note["verl"]):
            return dict(note)
    return None


def classify(key: str, version: str) -> KeyInfo:
    """How ``key`` behaves as an override on verl ``version`` (mapped to the nearest known release)."""
    release = version if version in KNOWN_RELEASES else nearest_release(version)
    keys = release_keys(release)
    ignored = _ignored_note(key, release)
    node = keys.get(key)
    if ignored is not None:
        kind = node["kind"] if node else None
        return KeyInfo(key, release, KeyStatus.IGNORED, kind, ignored.get("use"), ignored.get("why"))
    if node is not None:
        return KeyInfo(key, release, KeyStatus.PRESENT, node["kind"])
    moved = rename_for(key)
    if moved is not None and not moved.prefix and in_range(release, f">={moved.since}"):
        # A known wrong spelling under a pass-through map (ray_kwargs.ray_init.timeline_json_file) is
        # still wrong: the map forwards it to a function that has no such argument.
        return KeyInfo(key, release, KeyStatus.UNKNOWN)
    if _plus_note(key, release) is not None or _open_map_parent(key, release, keys) is not None:
        return KeyInfo(key, release, KeyStatus.PLUS)
    return KeyInfo(key, release, KeyStatus.UNKNOWN)


def releases_with_key(key: str) -> list[str]:
    """The known releases whose YAML (of the trainer config in effect) carries ``key``."""
    return [r for r in KNOWN_RELEASES if key in release_keys(r)]


def rename_for(key: str) -> Rename | None:
    for rename in renames():
        if rename.applies_to(key):
            return rename
    return None
