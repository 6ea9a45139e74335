"""A release's config composed with the overrides, as Hydra would, from the shipped key data (no Hydra run, no
verl import): the YAML defaults of ``kb/data/verl_keys``, the overrides applied in order, then the OmegaConf
interpolations those defaults use resolved (``${key}``, ``${.sibling}``, ``${oc.select:key,default}``).

Every value keeps where it came from: the override that set it, the release's default, or derived (an
interpolation that reads an overridden value).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kb.keysets import release_keys

_MAX_DEPTH = 12


class Missing:
    """The mandatory ``???`` of the YAML."""

    def __repr__(self) -> str:
        return "???"


class Unknown:
    """A value preflight cannot know: a shell variable of the input, an ``oc.env`` lookup, a list default."""

    def __init__(self, why: str, missing_key: str | None = None) -> None:
        self.why = why
        self.missing_key = missing_key  # an interpolation's key the config lacks (OmegaConf raises on it)

    def __repr__(self) -> str:
        return f"<unknown: {self.why}>"


MISSING = Missing()


@dataclass
class Slot:
    value: Any
    source: str  # override | default | option
    text: str | None = None  # the override as written


class Composed:
    """The composed config: dotted key → value, with provenance and the keys the YAML has as maps."""

    def __init__(self, release: str, keys: dict[str, dict[str, Any]] | None = None) -> None:
        self.release = release
        #: the key set composed from (the release's ppo_trainer, or with config-group choices applied)
        self.keys = keys if keys is not None else release_keys(release)
        self.slots: dict[str, Slot] = {}
        self.maps: set[str] = set()
        for key, node in self.keys.items():
            kind = node.get("kind")
            if kind == "map" or kind == "open_map":
                self.maps.add(key)
            elif kind == "missing":
                self.slots[key] = Slot(MISSING, "default")
            elif kind == "list":
                self.slots[key] = Slot(Unknown("a list default the key data does not record"), "default")
            else:
                self.slots[key] = Slot(node.get("default"), "default")
        self._resolved: dict[str, tuple[Any, list[str]]] = {}
        #: whether a local path exists where the job will read it (by default: on this machine)
        self.path_exists: Callable[[str], bool] = os.path.exists

    # -- overrides -------------------------------------------------------------------------------------------
    def set(self, key: str, value: Any, source: str, text: str | None = None) -> None:
        """``key=value`` as OmegaConf applies it: a section given a scalar (``optim=adam``, ``checkpoint=null``)
        loses its keys; a mapping value (``nnodes={a:1}``) becomes a section of its own."""
        if key in self.maps or isinstance(value, dict):
            self.delete(key)
        for prefix in _prefixes(key):
            self.maps.add(prefix)
        if isinstance(value, dict):
            self.maps.add(key)
            for sub, item in value.items():
                self.set(f"{key}.{sub}", item, source, text)
            return
        self.slots[key] = Slot(value, source, text)
        self._resolved.clear()

    def delete(self, key: str) -> None:
        for k in [k for k in self.slots if k == key or k.startswith(key + ".")]:
            del self.slots[k]
        self.maps = {m for m in self.maps if not (m == key or m.startswith(key + "."))}
        self._resolved.clear()

    def has(self, key: str) -> bool:
        return key in self.slots or key in self.maps

    # -- reading ---------------------------------------------------------------------------------------------
    def resolve(self, key: str) -> tuple[Any, list[str]]:
        """(value, the keys it was interpolated from) of a leaf; raises KeyError when the config lacks it."""
        if key in self._resolved:
            return self._resolved[key]
        slot = self.slots[key]
        via: list[str] = []
        value = slot.value
        if isinstance(value, str) and "${" in value:
            value = self._interpolate(value, key, via, 0)
        self._resolved[key] = (value, via)
        return value, via

    def source(self, key: str) -> tuple[str, list[str]]:
        """(override | default | derived | option, the overridden keys a derived value comes from)."""
        slot = self.slots.get(key)
        if slot is None:
            return "default", []
        if slot.source != "default":
            return slot.source, []
        _, via = self.resolve(key)
        touched = [k for k in via if k in self.slots and self.slots[k].source != "default"]
        return ("derived", touched) if touched else ("default", [])

    def _lookup(self, path: str, here: str, via: list[str], depth: int) -> tuple[bool, Any]:
        target = _absolute(path, here)
        if target is None:
            return False, None
        if target in self.slots:
            via.append(target)
            value = self.slots[target].value
            if isinstance(value, str) and "${" in value and depth < _MAX_DEPTH:
                value = self._interpolate(value, target, via, depth + 1)
            return True, value
        if target in self.maps:
            return True, Unknown(f"the whole section {target}")
        return False, None

    def _interpolate(self, text: str, here: str, via: list[str], depth: int) -> Any:
        if depth >= _MAX_DEPTH:
            return Unknown("an interpolation loop")
        whole = _whole_interp(text)
        if whole is not None:
            return self._one(whole, here, via, depth)
        parts: list[str] = []
        for piece, is_interp in _split_interps(text):
            if not is_interp:
                parts.append(piece)
                continue
            value = self._one(piece[2:-1], here, via, depth)
            if isinstance(value, Unknown | Missing):
                return value
            parts.append("None" if value is None else str(value))
        return "".join(parts)

    def _one(self, body: str, here: str, via: list[str], depth: int) -> Any:
        if body.startswith("oc.select:"):
            path, default = _split_select(body[len("oc.select:") :])
            found, value = self._lookup(path, here, via, depth)
            if found and not isinstance(value, Missing):
                return value
            if default is None:
                return None
            return _literal(default, self, here, via, depth)
        if body.startswith("oc.env:") or ":" in body.split(".", 1)[0]:
            return Unknown(f"${{{body}}} is read at run time")
        found, value = self._lookup(body, here, via, depth)
        if not found:
            return Unknown(f"${{{body}}} names a key the config lacks", _absolute(body, here) or body)
        return value


def _prefixes(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _absolute(path: str, here: str) -> str | None:
    """An interpolation's key as an absolute dotted key: ``.x`` is a sibling of ``here``, ``..x`` its parent's."""
    if not path.startswith("."):
        return path
    dots = len(path) - len(path.lstrip("."))
    parent = here.split(".")[:-1]
    up = dots - 1
    if up > len(parent):
        return None
    base = parent[: len(parent) - up] if up else parent
    rest = path[dots:]
    return ".".join([*base, rest]) if rest else ".".join(base)


def _whole_interp(text: str) -> str | None:
    if not (text.startswith("${") and text.endswith("}")):
        return None
    depth = 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return None
    return text[2:-1]


def _split_interps(text: str) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    i = 0
    while i < len(text):
        start = text.find("${", i)
        if start < 0:
            out.append((text[i:], False))
            break
        if start > i:
            out.append((text[i:start], False))
        depth, j = 0, start + 1
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        out.append((text[start : j + 1], True))
        i = j + 1
    return out


def _split_select(args: str) -> tuple[str, str | None]:
    depth = 0
    for i, ch in enumerate(args):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            return args[:i].strip(), args[i + 1 :].strip()
    return args.strip(), None


_NUM = re.compile(r"[+-]?\d+")


def _literal(text: str, cfg: Composed, here: str, via: list[str], depth: int) -> Any:
    """An ``oc.select`` default as OmegaConf's resolver grammar reads it."""
    if "${" in text:
        return cfg._interpolate(text, here, via, depth + 1)
    lower = text.lower()
    if lower == "null":
        return None
    if lower in ("true", "false"):
        return lower == "true"
    if _NUM.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("[]", "{}"):
        return [] if text == "[]" else {}
    return text
