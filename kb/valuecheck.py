"""The values of an override, checked as verl and Hydra would: Hydra's grammar (lists, sweeps), the key's type,
and the enum values each verl release validates (``data/verl_values.json``, extracted from verl's source at each
release tag by ``scripts/extract_verl_values.py``; every rule names the file and line verl checks it at).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from kb.hydra_literal import plain_override
from kb.keysets import release_keys

# What OmegaConf's BooleanNode turns into a bool (case-insensitive); anything else is a validation error.
_BOOL_WORDS = {"true", "false", "yes", "no", "on", "off", "y", "n", "1", "0"}


@dataclass(frozen=True)
class ValueProblem:
    """Why a value fails, and the value to use instead (``None`` when there is none to offer)."""

    message: str
    fails: bool = True
    use: Any = None
    has_use: bool = False


@lru_cache(maxsize=1)
def value_rules() -> dict[str, dict[str, dict[str, Any]]]:
    """key → release → rule (values, source, tag, when, error, ...)."""
    text = resources.files("kb").joinpath("data", "verl_values.json").read_text(encoding="utf-8")
    rules: dict[str, dict[str, dict[str, Any]]] = json.loads(text)["rules"]
    return rules


def rule_for(key: str, release: str) -> dict[str, Any] | None:
    return value_rules().get(key, {}).get(release)


def _parse(text: str) -> tuple[Any, str | None, bool]:
    """(value, Hydra's parse error, is a sweep) for one override as Hydra's grammar reads it."""
    plain, value = plain_override(text.strip())
    if plain:  # read as Hydra would, without importing its parser (a quarter of a second)
        return value, None, False
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_override(text)
    except HydraException as exc:
        return None, str(exc).splitlines()[0], False
    if parsed.is_sweep_override():
        sweep = parsed.value()
        return list(getattr(sweep, "list", []) or []), None, True
    return parsed.value(), None, False


def parse_value(text: str) -> Any:
    """The value of the override ``text`` as Hydra's grammar reads it (the raw text when Hydra cannot)."""
    value, error, sweep = _parse(text)
    if error is not None or sweep:
        return text.split("=", 1)[1] if "=" in text else text
    return value


def _cite(rule: dict[str, Any]) -> str:
    return f"{rule['source']} at {rule['tag']}"


def _close(value: str, allowed: list[str]) -> str | None:
    close = difflib.get_close_matches(value, allowed, n=1, cutoff=0.6)
    return close[0] if close else None


def _closest(value: str, allowed: list[str], default: Any) -> str:
    close = difflib.get_close_matches(value, allowed, n=1, cutoff=0.6)
    if close:
        return close[0]
    if isinstance(default, str) and default in allowed:
        return default
    return allowed[0]


def _enum_problem(key: str, value: Any, release: str, default: Any) -> ValueProblem | None:
    rule = rule_for(key, release)
    if rule is None or value is None or not isinstance(value, str | list):
        return None
    allowed: list[str] = list(rule["values"])
    items = value if isinstance(value, list) else [value]
    bad = []
    for item in items:
        text = str(item)
        if text.startswith("${"):
            continue
        base = text[:-1] if rule.get("suffix_plus") and text.endswith("+") else text
        if base not in allowed or text in rule.get("rejected", {}):
            bad.append(text)
    if not bad:
        deprecated = [str(i) for i in items if str(i) in rule.get("deprecated", {})]
        if deprecated:
            return ValueProblem(f"'{deprecated[0]}' is {rule['deprecated'][deprecated[0]]}", fails=False)
        return None
    first = bad[0]
    when = "at start-up" if rule["when"] == "start-up" else "at the first training step"
    mode = release_keys(release).get("actor_rollout_ref.rollout.mode", {}).get("default", "async")
    error = str(rule["error"]).replace("{value}", first).replace("{mode}", str(mode))
    if first in rule.get("rejected", {}):
        why = f"verl {release} rejects '{first}' ({rule['rejected'][first]})"
    elif rule.get("warn_others"):
        return ValueProblem(
            f"verl {release} warns \"Unknown rollout mode '{first}'\" and runs async anyway ({_cite(rule)})",
            fails=False,
            use=allowed[0],
            has_use=True,
        )
    else:
        why = f"verl {release} knows no '{first}' (accepted: {', '.join(allowed)})"
    fix: Any
    if isinstance(value, list):
        # an unknown element is replaced by its close match, or dropped when nothing is close
        fix = [str(i) if str(i) not in bad else _close(str(i), allowed) for i in items]
        fix = list(dict.fromkeys(f for f in fix if f)) or ["console"]
    else:
        fix = _closest(first, allowed, default)
    return ValueProblem(f"{why}; verl raises {when}: {error} ({_cite(rule)})", use=fix, has_use=True)


def check_value(
    key: str, text: str, value_text: str | None, kind: str | None, release: str, default: Any
) -> ValueProblem | None:
    """The problem with the value of ``text`` (the whole override) for ``key`` on verl ``release``, if any."""
    if value_text is None:
        return None
    value, error, sweep = _parse(text)
    if error is not None:
        return ValueProblem(f"Hydra cannot parse it: {error}")
    if sweep:
        as_list = [str(v) for v in value]
        wants_list = kind == "list" or bool((rule_for(key, release) or {}).get("list"))
        return ValueProblem(
            f"Hydra reads '{value_text}' as a sweep and stops: \"Ambiguous value for argument\" (without "
            "--multirun); write a list as key=[a,b], or quote the value to keep it a string",
            use=as_list if wants_list else ",".join(as_list),
            has_use=True,
        )
    if isinstance(value, str) and value.startswith("${"):
        return None
    if kind == "list" and isinstance(value, str) and value.strip().startswith("["):
        items = [v.strip().strip("'\"") for v in value.strip()[1:].rstrip("]").split(",") if v.strip()]
        return ValueProblem(
            f"Hydra keeps '{value}' as one string, not a list (the brackets were quoted); write the list unquoted "
            "inside the shell quotes",
            use=items,
            has_use=True,
        )
    problem = _type_problem(value, kind)
    if problem is not None:
        return problem
    return _enum_problem(key, value, release, default)


def _type_problem(value: Any, kind: str | None) -> ValueProblem | None:
    if value is None or not isinstance(value, str):
        return None
    if kind in ("int", "float"):
        try:
            int(value) if kind == "int" else float(value)
        except ValueError:
            noun = "an integer" if kind == "int" else "a number"
            return ValueProblem(
                f"'{value}' is not a number but the key holds {noun}; verl fails when it converts the config"
            )
    if kind == "bool" and value.strip().lower() not in _BOOL_WORDS:
        return ValueProblem(
            f"'{value}' is not true or false but the key holds a boolean; OmegaConf rejects it when verl converts the "
            "config to its dataclass, and code that reads the raw config takes any non-empty string as true"
        )
    return None
