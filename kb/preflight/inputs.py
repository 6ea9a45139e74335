"""What a user has before launch, turned into Hydra overrides: a command line, a launch script (read as a shell
reads it), a ``.hydra/overrides.yaml`` or a resolved ``config.yaml``."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from kb.overrides import extract_overrides, render_value

InputKind = Literal["command", "script", "overrides.yaml", "config.yaml"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
#: a shell variable in a word: $NAME, ${NAME}, ${NAME:-default}, ${NAME-default}
_VAR = re.compile(rf"\$(?:({_NAME})|\{{({_NAME})(?:(:?-)([^}}]*))?\}})")
#: what is left of an unknown shell variable in an override's value
PLACEHOLDER = re.compile(rf"\$(?:{_NAME}|\{{{_NAME}(?::?-[^}}]*)?\}})")
_TOP_KEYS = {"actor_rollout_ref", "data", "trainer", "algorithm", "critic"}


class InputError(ValueError):
    """The input cannot be read as any of the forms preflight takes."""


@dataclass
class ParsedInput:
    kind: InputKind
    overrides: list[str]
    placeholders: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _expand(line: str, env: dict[str, str], unknown: list[str]) -> str:
    """``line`` with the shell variables the script assigned replaced, outside single quotes; an unknown one is
    kept as written (and named in ``unknown``) unless it has a ``:-default``."""
    out: list[str] = []
    i, quote = 0, ""
    while i < len(line):
        ch = line[i]
        if ch == "\\" and quote != "'" and i + 1 < len(line):
            out.append(line[i : i + 2])
            i += 2
            continue
        if ch in "'\"" and (not quote or quote == ch):
            if not (ch == "'" and quote == '"'):
                quote = "" if quote == ch else ch
            out.append(ch)
            i += 1
            continue
        if ch == "$" and quote != "'":
            m = _VAR.match(line, i)
            if m is not None:
                name = m.group(1) or m.group(2)
                if name in env:
                    out.append(env[name])
                elif m.group(3) is not None:
                    out.append(m.group(4))
                else:
                    if name not in unknown:
                        unknown.append(name)
                    out.append(m.group(0))
                i = m.end()
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    return re.sub(r"\\\r?\n", " ", text).splitlines()


def parse_script(text: str) -> ParsedInput:
    """A launch script or a saved command line: ``\\`` continuations joined, ``VAR=...`` assignments followed
    (``$VAR`` / ``${VAR}`` expanded where the script assigned them), unknown variables kept and reported."""
    env: dict[str, str] = {}
    unknown: list[str] = []
    lines: list[str] = []
    for raw in _logical_lines(text):
        line = _expand(raw, env, unknown)
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split()
        assigned = False
        if words and words[0] in ("export", "declare", "readonly", "local"):
            words = words[1:]
            assigned = True
        if words and all(re.match(rf"^{_NAME}=", w) for w in words):
            for w in words:
                name, value = w.split("=", 1)
                env[name] = value
            assigned = True
        if not assigned:
            lines.append(line)
    overrides = extract_overrides("\n".join(lines))
    placeholders = [name for name in unknown if any(_uses(o, name) for o in overrides)]
    kind: InputKind = "script" if len([ln for ln in lines if ln.strip()]) > 1 or env else "command"
    notes = [
        f"${name} is not assigned in the input: values that use it are unknown and the checks that need them "
        "are skipped"
        for name in placeholders
    ]
    return ParsedInput(kind=kind, overrides=overrides, placeholders=placeholders, notes=notes)


def _uses(override: str, name: str) -> bool:
    return bool(re.search(rf"\$(?:{name}\b|\{{{name}[}}:-])", override))


def _flatten(node: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(node, dict):
        if not node and prefix:
            out[prefix] = {}
        for key, value in node.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = node


def parse_config_yaml(data: dict[str, Any], release: str) -> ParsedInput:
    """A resolved ``config.yaml``: one override for each value that differs from the release's default."""
    from kb.keysets import release_keys

    keys = release_keys(release)
    flat: dict[str, Any] = {}
    _flatten(data, "", flat)
    overrides: list[str] = []
    for key, value in flat.items():
        node = keys.get(key)
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict | list) for v in value)):
            continue
        default = node.get("default") if node is not None else None
        plain = node is not None and node.get("kind") not in ("list", "interp", "missing")
        if plain and default == value and type(default) is type(value):
            continue
        prefix = "" if node is not None else "+"
        overrides.append(f"{prefix}{key}={render_value(value)}")
    return ParsedInput(kind="config.yaml", overrides=overrides)


def parse_argv(args: list[str]) -> ParsedInput:
    """Words after ``--`` on the command line, already split by the user's shell: a launch command (the words
    after its entry point count) or bare overrides."""
    for i, word in enumerate(args):
        if (i > 0 and args[i - 1] == "-m") or word.endswith(".py"):
            return ParsedInput(kind="command", overrides=[w for w in args[i + 1 :] if w])
    if len(args) == 1 and ("\n" in args[0] or " " in args[0].strip()):
        return parse_text(args[0])
    return ParsedInput(kind="command", overrides=list(args))


def parse_text(text: str, release: str | None = None) -> ParsedInput:
    """Any of the file forms: ``overrides.yaml`` (a YAML list), ``config.yaml`` (a mapping with verl's sections),
    else a script or a saved command line."""
    if "\x00" in text:
        raise InputError("the input is binary, not a script or a YAML file")
    stripped = text.strip()
    if not stripped:
        raise InputError("the input is empty")
    if stripped.startswith(("- ", "[")) or stripped == "[]" or re.match(r"^[A-Za-z_][\w.]*:\s", stripped):
        try:
            data = yaml.safe_load(stripped)
        except yaml.YAMLError:
            data = None
        if isinstance(data, list):
            return ParsedInput(kind="overrides.yaml", overrides=[str(item) for item in data])
        if isinstance(data, dict):
            if not _TOP_KEYS & set(data):
                raise InputError("this YAML file is neither a .hydra/overrides.yaml nor a verl config.yaml")
            from kb.versions import LATEST_RELEASE

            return parse_config_yaml(data, release or LATEST_RELEASE)
    return parse_script(text)


#: how deep under a job directory a .hydra folder is looked for (outputs/<date>/<time>/.hydra)
_MAX_DEPTH = 4


def find_overrides(path: Path) -> Path | None:
    """The job's ``.hydra/overrides.yaml``: ``path`` itself, the one in it, or the newest one a few levels down."""
    if path.is_file():
        return path if path.name.endswith((".yaml", ".yml")) else None
    direct = path / ".hydra" / "overrides.yaml"
    if direct.is_file():
        return direct
    found: list[Path] = []
    for depth in range(1, _MAX_DEPTH):
        found += [p for p in path.glob("/".join(["*"] * depth) + "/.hydra/overrides.yaml") if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None
