"""Fix values computed from the user's own config: an override whose value is an expression (``expr``) over the
job's resolved values — the overrides found in the input first, then the verl release's defaults, at least one
value from the input — is rendered with the computed value; when a value it needs is unknown, the entry's example
value is shown and marked as one.
The main fix and each alternative are separate blocks (:class:`kb.result.FixAlternative`)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from kb.entry import Entry, Override
from kb.fixexpr import evaluate, expr_keys
from kb.keysets import release_keys
from kb.overrides import render_override, render_value
from kb.result import FixAlternative, RenderedOverride
from kb.versions import KNOWN_RELEASES, VersionError, in_range

_INTERP = re.compile(r"^\$\{(?:oc\.select:)?([A-Za-z0-9_.]+)(?:,([^}]*))?\}$")


def _number(text: object) -> float | None:
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, int | float):
        return float(text)
    try:
        return float(str(text).strip().strip("'\""))
    except ValueError:
        return None


class JobValues:
    """The job's resolved numeric config: the input's overrides, else the release's YAML defaults (simple
    ``${key}`` / ``${oc.select:key,default}`` interpolations followed)."""

    def __init__(self, overrides: Mapping[str, str], release: str) -> None:
        self.overrides = overrides
        self.release = release
        self.defaults = release_keys(release)

    def get(self, key: str, depth: int = 0) -> tuple[float, str] | None:
        """(value, where it came from) or None."""
        if key in self.overrides:
            value = _number(self.overrides[key])
            return (value, "from the input") if value is not None else None
        node = self.defaults.get(key)
        if node is None or depth > 5:
            return None
        default = node.get("default")
        if node.get("kind") == "interp" and isinstance(default, str):
            m = _INTERP.match(default)
            if m is None:
                return None
            inner = self.get(m.group(1), depth + 1)
            if inner is not None:
                return inner
            fallback = _number(m.group(2)) if m.group(2) is not None else None
            return (fallback, f"verl {self.release} default") if fallback is not None else None
        value = _number(default) if node.get("kind") in ("int", "float") else None
        return (value, f"verl {self.release} default") if value is not None else None


def _target(ov: Override, version: str | None) -> str | None:
    """The release an override is rendered for: the user's, or the newest its range covers."""
    if version is not None:
        try:
            return version if in_range(version, ov.verl) else None
        except VersionError:
            return version
    covered = [r for r in KNOWN_RELEASES if in_range(r, ov.verl)]
    return covered[-1] if covered else None


def _release_of(target: str) -> str:
    if target in KNOWN_RELEASES:
        return target
    from kb.versions import nearest_release

    return nearest_release(target)


def _computed(ov: Override, target: str, overrides: Mapping[str, str]) -> tuple[object, str] | None:
    assert ov.expr is not None
    try:
        job = JobValues(overrides, _release_of(target))
    except (KeyError, VersionError, ValueError):
        return None
    used: dict[str, tuple[float, str]] = {}
    for key in expr_keys(ov.expr):
        got = job.get(key)
        if got is None:
            return None
        used[key] = got
    if not any(where == "from the input" for _, where in used.values()):
        return None  # defaults alone describe no job: a job that failed did not run with all of them
    result = evaluate(ov.expr, {k: v for k, (v, _) in used.items()})
    if result is None:
        return None
    value: object = math.ceil(result - 1e-9) if isinstance(ov.value, int) or float(result).is_integer() else result
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if list(used) == [ov.expr.strip()]:
        ((v, where),) = used.values()
        return value, f"= {ov.expr.strip()} ({_show(v)}, {where})"
    facts = ", ".join(f"{k}={_show(v)} ({where})" for k, (v, where) in used.items())
    return value, f"= {ov.expr} with {facts}"


def _show(v: float) -> str:
    return render_value(int(v) if float(v).is_integer() else v)


def render_overrides(
    overrides: list[Override], version: str | None, job: Mapping[str, str] | None = None
) -> list[RenderedOverride]:
    """Each override for ``version`` (for an unknown version, every range's line), its value computed from
    ``job`` (the input's overrides) and the release's defaults where it has an ``expr``."""
    out = []
    for ov in overrides:
        target = _target(ov, version)
        if target is None:
            continue
        value: object = ov.value
        computed = None
        example = False
        if ov.expr is not None:
            got = _computed(ov, target, job or {})
            current = _number((job or {}).get(ov.key))
            if got is None or (current is not None and _number(got[0]) == current):
                example = True  # unknown values, or the computation gives back the value that failed
            else:
                value, computed = got
        out.append(
            RenderedOverride(
                key=ov.key,
                value=render_value(value),
                line=render_override(ov.key, value, target),
                verl=ov.verl,
                example=example,
                computed=computed,
            )
        )
    return out


def render_fix(
    entry: Entry, version: str | None, job: Mapping[str, str] | None = None
) -> tuple[list[RenderedOverride], list[FixAlternative]]:
    """The main fix and each alternative, as separate blocks, with values from the user's config."""
    fix = entry.meta.fix
    main = render_overrides(fix.overrides, version, job)
    alternatives = []
    for alt in fix.alternatives:
        lines = render_overrides(alt.overrides, version, job)
        if lines:
            alternatives.append(FixAlternative(title=alt.title, overrides=lines))
    return main, alternatives
