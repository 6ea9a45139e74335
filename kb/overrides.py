"""Hydra overrides: parse them from what users have, check them against a verl release, render them.

Hydra's struct mode rejects a key the YAML lacks ("Could not override"), rejects '+' on a key it has
("Could not append"), and composes '+key' for any key at all — even one verl never reads. This module
tells these cases apart per release, with the fix.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Iterable
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from kb.keysets import (
    KeyStatus,
    TrainerConfig,
    classify,
    release_keys,
    releases_with_key,
    rename_for,
    renames,
    trainer_config,
    trainer_config_of,
)
from kb.valuecheck import check_value
from kb.versions import KNOWN_RELEASES, KNOWN_SPAN, in_range, nearest_release, parse_version

_OVERRIDE_RE = re.compile(
    r"^(?P<prefix>\+\+|\+|~)?(?P<key>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)(?:=(?P<value>.*))?$"
)
_NEEDS_QUOTES = re.compile(r"[\s,\[\]{}()'\"=:\\$*?]")

Status = Literal[
    "ok", "deprecated", "needs_plus", "remove_plus", "ignored", "unknown", "bad_value", "malformed", "other_config"
]


class ParsedOverride(BaseModel):
    text: str
    prefix: str
    key: str
    value: str | None


class OverrideVerdict(BaseModel):
    """The verdict on one override for one verl release."""

    text: str
    key: str
    status: Status
    fails: bool  # Hydra would reject it, or verl would silently ignore it
    message: str
    suggestion: str | None = None


class OverrideReport(BaseModel):
    verl_version: str
    release_checked: str
    config: TrainerConfig | None = Field(
        default=None,
        description=(
            "the trainer config checked against (from --config-name); None: FSDP's, Megatron's keys told apart"
        ),
    )
    verdicts: list[OverrideVerdict]

    @property
    def failed(self) -> bool:
        return any(v.fails for v in self.verdicts)


def render_value(value: Any) -> str:
    """A Python value as Hydra's override grammar spells it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ",".join(render_value(v) for v in value) + "]"
    text = str(value)
    if text == "" or (_NEEDS_QUOTES.search(text) and not re.fullmatch(r"[\w./:@-]+", text)):
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return text


def render_override(key: str, value: Any, version: str) -> str:
    """``key=value`` or ``+key=value`` as the given verl release needs it, quoted for a POSIX shell where
    the shell would change it (a list's brackets are a glob, a Hydra-quoted string's quotes would go), so
    the line a user pastes reaches Hydra as written."""
    info = classify(key, version)
    return shlex.quote(f"{info.prefix}{key}={render_value(value)}")


def parse_override(text: str) -> ParsedOverride | None:
    m = _OVERRIDE_RE.match(text.strip())
    if not m:
        return None
    return ParsedOverride(text=text.strip(), prefix=m["prefix"] or "", key=m["key"], value=m["value"])


_ENTRY_POINTS = ("main_ppo", "main_ppo.py", "main_generation", "main_eval")
#: Commands whose words are the shell's business, never Hydra's (``export VLLM_ATTENTION_BACKEND=...``).
_SHELL_BUILTINS = {"export", "declare", "typeset", "local", "readonly", "set", "unset", "alias", "source", "."}
_SHELL_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", ";;", "|&"}


def _shell_commands(text: str) -> list[list[str]]:
    """The simple commands of ``text`` as a POSIX shell splits them: line continuations joined, comments
    dropped, quotes removed, ``;`` ``&&`` ``|`` separating commands; ``$VAR`` is kept as written."""
    joined = re.sub(r"\\\r?\n", " ", text)
    commands: list[list[str]] = []
    for line in joined.splitlines():
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words = list(lexer)
        except ValueError:  # an unbalanced quote: split on blanks, as best we can
            words = line.split(" #", 1)[0].split()
        current: list[str] = []
        for word in words:
            if word in _SEPARATORS:
                commands.append(current)
                current = []
            else:
                current.append(word)
        commands.append(current)
    return [c for c in commands if c]


def _entry_index(words: list[str]) -> int | None:
    for i, word in enumerate(words):
        if word.endswith(_ENTRY_POINTS) or word.endswith(".py"):
            return i
    return None


def extract_overrides(text: str) -> list[str]:
    """Override tokens from a command line, a shell script or a ``.hydra/overrides.yaml``.

    A script is read as a shell reads it (quotes, continuations, comments, ``;``/``&&``); with a launch
    command (``... main_ppo``) in it, only the words after the entry point count, so ``export X=1`` and
    ``VAR=value`` lines are not overrides. A bare dotted key after the entry point is kept: Hydra refuses
    it, and the check says so."""
    stripped = text.strip()
    if stripped.startswith("- ") or stripped.startswith("[") or stripped == "[]":
        try:
            data = yaml.safe_load(stripped)
        except yaml.YAMLError:
            data = None
        if isinstance(data, list):
            return [str(item) for item in data]
    commands = _shell_commands(text)
    launched = [(c, i) for c in commands if (i := _entry_index(c)) is not None]
    tokens: list[str] = []
    if launched:
        for words, index in launched:
            tokens += [w for w in words[index + 1 :] if _OVERRIDE_RE.match(w) and ("=" in w or w[0] == "~" or "." in w)]
        return tokens
    for words in commands:  # no launch command: a list of overrides, beside the shell's own lines
        if words[0] in _SHELL_BUILTINS:
            continue
        tokens += [w for w in words if _OVERRIDE_RE.match(w) and ("=" in w or w[0] == "~") and not _env_like(w)]
    return tokens


def _env_like(word: str) -> bool:
    """``NAME=value`` with an upper-case shell name (no dots): an environment variable, never a config key."""
    name = word.split("=", 1)[0]
    return bool(_SHELL_ASSIGNMENT.match(word)) and name.isupper()


#: A launch command: a Python interpreter (or torchrun) on the line, then the entry point: a verl
#: module (``-m verl.trainer.main_ppo``, ``-m recipe.dapo.main_dapo``) or a script (``.../main_ppo.py``).
_LAUNCH_HINT = re.compile(r"(?:^|[\s/;&|(])(?:python[\d.]*|torchrun)(?:\s|$)")
_INTERPRETER = re.compile(r"(?:^|/)(?:python[\d.]*|torchrun)$")
_ENTRY_MODULE = re.compile(r"^(?:verl(?:\.\w+)*|(?:\w+\.)*main_\w+)$")
_COMMAND_END = {"|", "||", "&&", ";", "&", ">", ">>", "2>&1", "2>", "1>", "|&"}


def launch_overrides(texts: Iterable[str]) -> list[str]:
    """Override tokens from the launch command lines among ``texts`` (console lines, a shell script): a
    line that runs a verl entry point with an interpreter, joined with the lines its trailing ``\\``
    continues. Nothing else counts: a warning that says "please set critic.enable=True", or Ray's
    ``(pid=…, ip=…, actor_id=…, repr=<main_ppo.TaskRunner …>)`` line, is not something the user passed."""
    rows = list(texts)
    out: list[str] = []
    i = 0
    while i < len(rows):
        line = rows[i]
        if not _LAUNCH_HINT.search(line):
            i += 1
            continue
        while line.rstrip().endswith("\\") and i + 1 < len(rows):
            i += 1
            line = line.rstrip()[:-1] + " " + rows[i]
        out += _command_tokens(line)
        i += 1
    return out


def _command_tokens(line: str) -> list[str]:
    try:
        parts = shlex.split(line.split(" #", 1)[0], comments=False)
    except ValueError:
        parts = line.split()
    start = None
    for i, tok in enumerate(parts):
        module = i > 0 and parts[i - 1] == "-m" and _ENTRY_MODULE.match(tok)
        if module or tok.endswith(".py"):
            start = i + 1
            break
    if start is None or not any(_INTERPRETER.search(t) for t in parts[:start]):
        return []
    tokens: list[str] = []
    for tok in parts[start:]:
        if tok in _COMMAND_END or tok.startswith((">", "2>", "1>")):
            break
        if _OVERRIDE_RE.match(tok) and ("=" in tok or tok.startswith("~")):
            tokens.append(tok)
        elif not tok.startswith(("-", "$", "/", ".")) and "/" not in tok:
            break  # a plain word: prose that quotes a command ("run python -m verl.trainer.main_ppo with ...")
    return tokens


def _rename_hint(key: str, release: str) -> tuple[str, str] | None:
    """(suggested key, reason) from the rename table, both directions."""
    rename = rename_for(key)
    if rename is not None and rename.typo:
        return rename.new, f"{key} was never a verl key; the key is {rename.new}"
    if rename is not None and in_range(release, f">={rename.since}"):
        return rename.translate(key), f"renamed to {rename.translate(key)} in verl {rename.since}"
    for r in renames():  # a new name used on a release that still had the old one
        if (key == r.new or (r.prefix and key.startswith(r.new + "."))) and not in_range(release, f">={r.since}"):
            old = r.old + key[len(r.new) :] if r.prefix else r.old
            return old, f"verl {release} predates the name {key} (introduced in {r.since}); it used {old}"
    return None


def close_keys(key: str, release: str, limit: int = 3) -> list[str]:
    keys = [k for k, v in release_keys(release).items() if v["kind"] != "map"]
    tail = "." + key
    suffix_hits = [k for k in keys if k.endswith(tail)]
    fuzzy = difflib.get_close_matches(key, keys, n=limit, cutoff=0.75)
    out: list[str] = []
    for k in [*suffix_hits, *fuzzy]:
        if k not in out:
            out.append(k)
    return out[:limit]


def _where_else(key: str) -> str:
    present = releases_with_key(key)
    if not present and any(key in release_keys(r, "ppo_trainer") for r in KNOWN_RELEASES):
        return "the FSDP config ppo_trainer has it, this Megatron one does not"
    if not present:
        return f"no verl release from {KNOWN_SPAN} has it"
    if len(present) == 1:
        return f"only verl {present[0]} has it"
    return f"verl {present[0]} to {present[-1]} have it"


def _bad_value(parsed: ParsedOverride, release: str, verdict: Any) -> OverrideVerdict | None:
    """The verdict on the value of an override of a key the release's YAML has: Hydra's grammar, the key's
    type, and the enum values verl validates (kb.valuecheck); None when the value is fine."""
    if parsed.value is not None and "$" in parsed.value and not parsed.value.strip().startswith("${"):
        return None  # a shell $VAR from a launch script: a placeholder, its value unknown here
    node = release_keys(release).get(parsed.key, {})
    problem = check_value(parsed.key, parsed.text, parsed.value, node.get("kind"), release, node.get("default"))
    if problem is None:
        return None
    suggestion = render_override(parsed.key, problem.use, release) if problem.has_use else None
    if not problem.fails:
        return verdict("deprecated", False, problem.message, suggestion)
    result: OverrideVerdict = verdict("bad_value", True, problem.message, suggestion)
    return result


def _line(prefix: str, key: str, value: str | None) -> str:
    return f"{prefix}{key}" + (f"={value}" if value is not None else "")


def _suggest_key(key: str, value: str | None, release: str) -> tuple[str | None, str]:
    hint = _rename_hint(key, release)
    if hint is not None:
        new_key, reason = hint
        info = classify(new_key, release)
        if info.status in (KeyStatus.PRESENT, KeyStatus.PLUS):
            return _line(info.prefix, new_key, value), reason
    close = close_keys(key, release)
    if close:
        info = classify(close[0], release)
        extra = f" (other candidates: {', '.join(close[1:])})" if len(close) > 1 else ""
        return _line(info.prefix, close[0], value), f"did you mean {close[0]}?{extra}"
    return None, ""


def check_one(parsed: ParsedOverride, release: str) -> OverrideVerdict:
    key, value, prefix = parsed.key, parsed.value, parsed.prefix
    info = classify(key, release)
    in_yaml = key in release_keys(release)

    def verdict(status: Status, fails: bool, message: str, suggestion: str | None = None) -> OverrideVerdict:
        return OverrideVerdict(
            text=parsed.text, key=key, status=status, fails=fails, message=message, suggestion=suggestion
        )

    if prefix == "~":
        if in_yaml:
            return verdict("ok", False, "deletes a key the config has")
        return verdict("unknown", True, f"Hydra cannot delete {key}: verl {release} has no such key")

    if info.status is KeyStatus.IGNORED:
        suggestion = _replacement(key, value, release, info.use_instead)
        why = f": {info.why}" if info.why else ""
        if not in_yaml and prefix == "":
            return verdict(
                "ignored",
                True,
                f"Hydra rejects it (Could not override '{key}'), and with '+' verl {release} would ignore it{why}",
                suggestion,
            )
        return verdict("ignored", True, f"verl {release} accepts {key} but no code reads it{why}", suggestion)

    if prefix == "":
        if in_yaml:
            bad = _bad_value(parsed, release, verdict)
            if bad is not None:
                return bad
            rename = rename_for(key)
            if rename is not None and rename.deprecated and in_range(release, f">={rename.since}"):
                return verdict(
                    "deprecated",
                    False,
                    f"still works on verl {release} but is deprecated since {rename.since}",
                    _line(classify(rename.new, release).prefix, rename.new, value),
                )
            return verdict("ok", False, f"verl {release} has this key")
        if info.status is KeyStatus.PLUS:
            return verdict(
                "needs_plus",
                True,
                f"verl {release} reads {key} but its YAML lacks it: Hydra says \"Could not override '{key}'\"; add '+'",
                _line("+", key, value),
            )
        suggestion, reason = _suggest_key(key, value, release)
        return verdict(
            "unknown",
            True,
            f"Hydra rejects it: Could not override '{key}' ({_where_else(key)})" + (f"; {reason}" if reason else ""),
            suggestion,
        )

    # '+' or '++'
    if in_yaml:
        if prefix == "++":
            return _bad_value(parsed, release, verdict) or verdict(
                "ok", False, f"verl {release} has this key; '++' overrides it"
            )
        return verdict(
            "remove_plus",
            True,
            f"Hydra refuses: Could not append to config. An item is already at '{key}'; drop the '+'",
            _line("", key, value),
        )
    if info.status is KeyStatus.PLUS:
        return verdict("ok", False, f"verl {release} reads {key}; it is absent from the YAML, so '+' is right")
    suggestion, reason = _suggest_key(key, value, release)
    return verdict(
        "unknown",
        True,
        f"Hydra adds it, but verl {release} never reads {key}, so it changes nothing"
        + (f"; {reason}" if reason else ""),
        suggestion,
    )


def _replacement(key: str, value: str | None, release: str, use: str | None) -> str | None:
    """The override that does what an ignored one meant: the renamed key, else the note's 'use'."""
    rename = rename_for(key)
    for candidate in (rename.translate(key) if rename else None, use):
        if candidate is None:
            continue
        info = classify(candidate, release)
        if info.status in (KeyStatus.PRESENT, KeyStatus.PLUS) and info.kind != "map":
            return _line(info.prefix, candidate, value)
    return None


def config_name_of(text: str) -> str | None:
    """The ``--config-name`` (or ``-cn``) a launch command in ``text`` gives Hydra, or None."""
    for words in _shell_commands(text):
        for i, word in enumerate(words):
            if word.startswith("--config-name="):
                return word.split("=", 1)[1] or None
            if word in ("--config-name", "-cn") and i + 1 < len(words):
                return words[i + 1]
    return None


def megatron_only_verdict(verdict: OverrideVerdict, release: str, refused: bool) -> OverrideVerdict:
    """An unknown key that Megatron's config has: right for a launch with --config-name=ppo_megatron_trainer,
    rejected by Hydra with ppo_trainer (``refused``: the launch says it uses that one). Either way the
    did-you-mean of FSDP's key set (often a rollout key of the same name) is not the fix."""
    if refused:
        message = (
            f"Hydra rejects it: Could not override '{verdict.key}' (verl {release} has it in its Megatron trainer "
            "config only: launch with --config-name=ppo_megatron_trainer for a Megatron job)"
        )
        return verdict.model_copy(update={"message": message, "suggestion": None})
    message = (
        f"verl {release} has this key in its Megatron trainer config only: fine with "
        "--config-name=ppo_megatron_trainer (as verl's Megatron examples launch); with the default "
        f"ppo_trainer config Hydra says Could not override '{verdict.key}'"
    )
    return verdict.model_copy(update={"status": "other_config", "fails": False, "message": message, "suggestion": None})


def check_overrides(
    texts: Iterable[str], verl_version: str | None = None, config_name: str | None = None
) -> OverrideReport:
    """Check override strings against one verl release (the newest known when none is given) and the trainer
    config ``config_name`` names (``--config-name``). Without one, keys are checked against FSDP's config,
    and a key only Megatron's has is told apart instead of refused."""
    version = verl_version or KNOWN_RELEASES[-1]
    parse_version(version)
    release = version if version in KNOWN_RELEASES else nearest_release(version)
    config = trainer_config_of(config_name)
    with trainer_config(config or "ppo_trainer"):
        verdicts = _check_all(list(texts), release)
    if config != "ppo_megatron_trainer":
        megatron = release_keys(release, "ppo_megatron_trainer")
        verdicts = [
            megatron_only_verdict(v, release, refused=config is not None)
            if v.status == "unknown" and v.key in megatron and not v.text.startswith("~")
            else v
            for v in verdicts
        ]
    return OverrideReport(verl_version=version, release_checked=release, config=config, verdicts=verdicts)


def _check_all(texts: list[str], release: str) -> list[OverrideVerdict]:
    verdicts = []
    for text in texts:
        parsed = parse_override(text)
        if parsed is None:
            verdicts.append(
                OverrideVerdict(
                    text=text,
                    key="",
                    status="malformed",
                    fails=True,
                    message="not a Hydra override: write key=value, +key=value, ++key=value or ~key",
                )
            )
            continue
        if parsed.value is None and parsed.prefix != "~":
            verdicts.append(
                OverrideVerdict(
                    text=text,
                    key=parsed.key,
                    status="malformed",
                    fails=True,
                    message=f"'{parsed.key}' has no value: Hydra refuses a bare key (write {parsed.key}=VALUE)",
                )
            )
            continue
        verdicts.append(check_one(parsed, release))
    return verdicts
