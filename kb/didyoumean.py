"""Hydra's "did you mean": for each config key Hydra rejected in an input, the key the user most likely meant on
their verl release, with the override line to use when the input carries the value (the check-overrides logic
of :mod:`kb.overrides` applied to the key)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Literal

from kb.keysets import TrainerConfig, release_keys, trainer_config
from kb.loglines import Line
from kb.overrides import (
    ParsedOverride,
    check_one,
    close_keys,
    megatron_only_verdict,
    parse_override,
    render_override,
)
from kb.result import KeySuggestion
from kb.signals import Signals
from kb.valuecheck import parse_value
from kb.versions import KNOWN_RELEASES, nearest_release

_ErrorKind = Literal["could_not_override", "not_in_struct", "could_not_append"]
_MAX = 5


_MEGATRON: TrainerConfig = "ppo_megatron_trainer"


def _release(version: str | None) -> tuple[str, bool]:
    if version is None:
        return KNOWN_RELEASES[-1], True
    try:
        return (version if version in KNOWN_RELEASES else nearest_release(version)), False
    except ValueError:
        return KNOWN_RELEASES[-1], True


def _rejected(signals: Signals) -> list[tuple[str, _ErrorKind, int]]:
    """(full key, error, line) for each key Hydra rejected. "Could not override" and "Could not append" name the
    override's key. "Key 'x' is not in struct" names only the part of the key that is missing, its full key is on
    the ``full_key:`` line after it; it counts only beside no "Could not override" of that key and for a key the
    input's own overrides set (verl's code reading a key that is absent raises the same error)."""
    out: list[tuple[str, _ErrorKind, int]] = []
    hydra = sorted(signals.hydra, key=lambda h: h.line_no)
    for h in hydra:
        if h.key and h.kind in ("could_not_override", "could_not_append") and h.key not in [k for k, _, _ in out]:
            out.append(
                (h.key, "could_not_override" if h.kind == "could_not_override" else "could_not_append", h.line_no)
            )
    for i, h in enumerate(hydra):
        if h.kind != "not_in_struct" or not h.key:
            continue
        full = next((x.key for x in hydra[i + 1 : i + 3] if x.kind == "full_key"), None)
        if full is None or not full.endswith(h.key):
            continue
        if any(k == full or k.startswith(full + ".") for k, _, _ in out):
            continue
        set_by_user = [k for k in signals.overrides if k == full or k.startswith(full + ".")]
        if set_by_user:
            out.append((set_by_user[0], "not_in_struct", h.line_no))
    return out[:_MAX]


def _value(key: str, signals: Signals, lines: Sequence[Line]) -> str | None:
    if key in signals.overrides:
        return signals.overrides[key]
    k = re.escape(key)
    hints = [
        re.compile(r"To append to your config use \+" + k + r"=(\S+)"),
        re.compile(r"remove \+ prefix: '" + k + r"=(.*)'$"),
    ]
    for line in lines:
        for hint in hints:
            m = hint.search(line.text.strip())
            if m:
                return m.group(1)
    return None


def _alike(key: str, other: str) -> bool:
    a, b = key.rsplit(".", 1)[-1], other.rsplit(".", 1)[-1]
    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.75


def _reason(status: str, message: str, key: str, release: str) -> str:
    if status == "ok":
        return f"verl {release} has {key}, so the job ran another release: check-overrides with its version"
    if status == "needs_plus":
        return f"verl {release} reads {key} although its YAML lacks it, so it needs a leading '+'"
    if status == "remove_plus":
        return f"verl {release} already has {key}: drop the '+'"
    if status == "unknown" and message.startswith("Hydra rejects it"):
        where = message[message.find("(") + 1 : message.find(")")] if "(" in message else ""
        why = message.split("; ", 1)[1] if "; " in message else ""
        if why.startswith("did you mean"):
            why = f"the closest key of verl {release}"
        return "; ".join(x for x in (where, why) if x)
    return message


def key_suggestions(signals: Signals, lines: Sequence[Line], version: str | None) -> list[KeySuggestion]:
    """The did-you-mean for each key Hydra rejected in the input (none when Hydra rejected nothing)."""
    rejected = _rejected(signals)
    if not rejected:
        return []
    release, assumed = _release(version)
    out = []
    for key, kind, line_no in rejected:
        value = _value(key, signals, lines)
        prefix = "+" if kind == "could_not_append" else ""
        parsed = ParsedOverride(text=f"{prefix}{key}={value or 'x'}", prefix=prefix, key=key, value=value)
        # Which trainer config rejected it is not in Hydra's message: a key only one of the two has says it.
        in_fsdp, in_megatron = key in release_keys(release, "ppo_trainer"), key in release_keys(release, _MEGATRON)
        config: TrainerConfig = _MEGATRON if in_fsdp and not in_megatron else "ppo_trainer"
        with trainer_config(config):
            verdict = check_one(parsed, release)
            if in_megatron and not in_fsdp:
                verdict = megatron_only_verdict(verdict, release, refused=True)
            suggested = parse_override(verdict.suggestion) if verdict.suggestion else None
            if suggested is not None and "did you mean" in verdict.message and not _alike(key, suggested.key):
                suggested = None  # a fuzzy neighbour with another name (actor.megatron -> actor.qat.mode) is no answer
            reason = _reason(verdict.status, verdict.message, key, release)
            # FSDP's neighbours of a Megatron-only key (the rollout's TP) are no candidates either
            close = [] if in_megatron and not in_fsdp else close_keys(key, release)
            candidates = [k for k in close if suggested is None or k != suggested.key]
        line = None
        if suggested is not None and value is not None:
            line = render_override(suggested.key, parse_value(f"{suggested.key}={value}"), release)
        out.append(
            KeySuggestion(
                key=key,
                error=kind,
                line_no=line_no,
                release=release,
                release_assumed=assumed,
                suggested_key=(suggested.prefix + suggested.key) if suggested else None,
                line=line,
                reason=reason,
                candidates=candidates,
            )
        )
    return out
