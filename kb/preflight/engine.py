"""``preflight``: the overrides of a launch, checked the way verl checks them when it starts, for one release."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

from kb import __version__
from kb.fixexpr import ExprError, evaluate
from kb.keysets import KeyStatus, classify
from kb.overrides import OverrideVerdict, check_overrides, parse_override, render_override, render_value
from kb.preflight.checks import CHECKS, Ctx, Fix, Violation, run_steps, steps
from kb.preflight.compose import Composed, Missing, Unknown
from kb.preflight.groups import GroupChoice, base_keys, group_choice
from kb.preflight.hydra_stage import HydraProblem, entry_for_key, hydra_problems
from kb.preflight.inputs import PLACEHOLDER
from kb.preflight.models import PreflightFinding, PreflightResult, PreflightValue, Severity, Stage
from kb.result import FixAlternative, RenderedOverride
from kb.versions import KNOWN_RELEASES, LATEST_RELEASE, in_range, nearest_release, parse_version

#: the stage of each step that runs after verl's start-up validation
_LATER_STEPS = {"step_rollout_later": "workers", "step_token_budget": "training", "step_normalisation": "workers"}
#: value checks of check-overrides that a step already evaluates the way verl does
_STEP_KEYS = {"actor_rollout_ref.actor.loss_agg_mode"}


def release_for(version: str | None) -> str:
    if version is None:
        return LATEST_RELEASE
    parse_version(version)
    return version if version in KNOWN_RELEASES else nearest_release(version)


def _show(value: Any) -> str:
    if isinstance(value, Missing):
        return "???"
    if isinstance(value, Unknown):
        return "<unknown>"
    try:
        return render_value(value)
    except Exception:  # an odd value from a config.yaml: show it as Python does
        return repr(value)


def _value_of(cfg: Composed, key: str, ctx: Ctx | None = None) -> PreflightValue:
    if ctx is not None and key in ctx.derived:
        value, how = ctx.derived[key]
        return PreflightValue(key=key, value=_show(value), source="derived", note=f"= {how}")
    value, _via = cfg.resolve(key) if key in cfg.slots else (None, [])
    source, touched = cfg.source(key)
    note = None
    if source == "derived":
        note = "interpolated from " + ", ".join(touched)
    elif source == "override" and cfg.slots[key].text:
        note = cfg.slots[key].text
    return PreflightValue(key=key, value=_show(value), source=source, note=note)  # type: ignore[arg-type]


def _numbers(cfg: Composed, ctx: Ctx) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in cfg.slots:
        try:
            value, _ = cfg.resolve(key)
        except KeyError:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = float(value)
    for name, (value, _) in ctx.derived.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = float(value)
    return out


def _render_fix(fix: Fix, release: str, numbers: dict[str, float]) -> list[RenderedOverride]:
    lines: list[RenderedOverride] = []
    for key, value, is_expr in fix.lines:
        expr = str(value)
        if classify(key, release).status not in (KeyStatus.PRESENT, KeyStatus.PLUS):
            continue  # never print an override that does nothing on this release
        computed = None
        if is_expr:
            try:
                result = evaluate(str(value), numbers)
            except (ExprError, ValueError, ZeroDivisionError):
                result = None
            if result is None:
                continue
            value = (
                math.ceil(result - 1e-9) if float(result).is_integer() or abs(result - round(result)) < 1e-9 else result
            )
            value = max(1, value) if isinstance(value, int) else value
            current = numbers.get(key)
            if current is not None and float(value) == current:
                continue  # the computation gives back the value that fails: no fix along this line
            computed = f"= {_expr_text(expr, numbers)}"
        lines.append(
            RenderedOverride(
                key=key,
                value=render_value(value),
                line=render_override(key, value, release),
                verl=f"=={release}",
                computed=computed,
            )
        )
    return lines


def _expr_text(expr: str, numbers: dict[str, float]) -> str:
    from kb.fixexpr import expr_keys

    used = ", ".join(
        f"{k}={_show(int(numbers[k]) if numbers[k].is_integer() else numbers[k])}"
        for k in expr_keys(expr)
        if k in numbers
    )
    return f"{expr} with {used}" if used else expr


def _fixes(
    fixes: list[Fix], release: str, numbers: dict[str, float]
) -> tuple[list[RenderedOverride], list[FixAlternative]]:
    main: list[RenderedOverride] = []
    alternatives: list[FixAlternative] = []
    for fix in fixes:
        rendered = _render_fix(fix, release, numbers)
        if not rendered:
            continue
        if not main:
            main = rendered
        else:
            alternatives.append(FixAlternative(title=fix.title, overrides=rendered))
    return main, alternatives


def _hydra_finding(p: HydraProblem, release: str) -> PreflightFinding:
    v: OverrideVerdict = p.verdict
    overrides: list[RenderedOverride] = []
    if v.suggestion:
        parsed = parse_override(v.suggestion.strip("'"))
        key = parsed.key if parsed else v.key
        value = parsed.value if parsed and parsed.value is not None else ""
        overrides.append(RenderedOverride(key=key, value=value, line=v.suggestion, verl=f"=={release}"))
    return PreflightFinding(
        check=p.check,
        stage="hydra",
        severity="error",
        message=p.message,
        explanation=v.message,
        exception=p.exception,
        values=[PreflightValue(key=v.key or v.text, value=v.text, source="override", note=None)],
        entry=p.entry,
        verl_source="hydra/_internal/config_loader_impl.py (Hydra 1.3, as verl pins it)",
        overrides=overrides,
    )


def _group_finding(choice: GroupChoice, release: str) -> PreflightFinding:
    line = f"{choice.group}={choice.option}" if choice.check == "hydra-key-not-in-struct" else f"{choice.group}=dp"
    return PreflightFinding(
        check=choice.check,
        stage="hydra",
        severity="error",
        message=choice.error or "",
        explanation=f"the defaults list of verl {release} keys this group by its name alone: write {line}"
        if choice.check == "hydra-key-not-in-struct"
        else f"verl {release} has no {choice.group} option {choice.option}",
        exception="ConfigCompositionException",
        values=[PreflightValue(key=f"{choice.group}@{choice.package}", value=choice.text, source="override")],
        entry="hydra-override-key-not-in-struct",
        verl_source="hydra/_internal/defaults_list.py (Hydra 1.3)",
        overrides=[RenderedOverride(key=choice.group, value=choice.option, line=line, verl=f"=={release}")],
    )


def _step_finding(v: Violation, ctx: Ctx, cfg: Composed, stage: str) -> PreflightFinding:
    check = CHECKS[v.check]
    if stage != "validate" and check.stage in ("workers", "training"):
        stage = check.stage  # a later step's own checks say when verl meets them
    severity = check.severity if check.severity == "warning" else ("error" if stage == "validate" else "later")
    keys = v.keys or ctx.read
    values = [_value_of(cfg, k, ctx) for k in keys if k in cfg.slots]
    if not v.keys:  # the gates a step read on its way (use_dynamic_bsz=False, strategy=fsdp) are not the cause
        values = [x for x in values if x.source != "default" or x.value not in ("False", "True", "fsdp")]
    values += [_value_of(cfg, name, ctx) for name in ctx.derived if name not in keys]
    main, alternatives = _fixes(v.fixes, cfg.release, _numbers(cfg, ctx))
    entry = check.entry
    if v.check == "config-key-missing" and any(k.endswith("actor.megatron") or ".megatron." in k for k in keys):
        entry = "actor-strategy-megatron-on-fsdp-config"
    if v.check == "missing-mandatory-value" and not any(k.endswith("rollout.name") for k in keys):
        entry = None
    if v.check == "unexpected-dataclass-field":
        entry = entry_for_key(keys[0]) if keys else entry
    return PreflightFinding(
        check=v.check,
        stage=cast(Stage, stage),
        severity=cast(Severity, severity),
        message=v.message or f"{v.exception} (verl gives no message)",
        explanation=v.explanation or check.title,
        exception=v.exception,
        values=values,
        entry=entry,
        verl_source=check.source_at(cfg.release),
        overrides=main,
        alternatives=alternatives,
    )


def _value_findings(verdicts: list[OverrideVerdict], hydra_bad: set[int], release: str) -> list[PreflightFinding]:
    """check-overrides' verdicts that are not Hydra errors: bad enum or typed values verl meets after start-up,
    keys verl accepts and ignores, deprecated ones."""
    out = []
    for i, v in enumerate(verdicts):
        if i in hydra_bad or v.status == "ok" or v.key in _STEP_KEYS:
            continue
        if v.status == "bad_value" and v.fails:
            if v.key == "algorithm.adv_estimator" and in_range(release, "<0.6.0"):
                continue  # the trainer's own step raises it
            check, stage, severity = "value-rejected-later", "workers", "later"
            if "as one string" in v.message:
                check, stage, severity = "value-is-a-string", "hydra", "warning"
        elif v.status in ("ignored", "unknown"):
            check, stage, severity = "key-ignored", "hydra", "warning"
        else:
            check, stage, severity = "key-deprecated", "hydra", "warning"
        overrides = []
        if v.suggestion:
            parsed = parse_override(v.suggestion.strip("'"))
            overrides.append(
                RenderedOverride(
                    key=parsed.key if parsed else v.key,
                    value=(parsed.value or "") if parsed else "",
                    line=v.suggestion,
                    verl=f"=={release}",
                )
            )
        out.append(
            PreflightFinding(
                check=check,
                stage=cast(Stage, stage),
                severity=cast(Severity, severity),
                message=v.message,
                explanation=v.message,
                values=[PreflightValue(key=v.key, value=v.text, source="override")],
                entry=_value_entry(v),
                overrides=overrides,
            )
        )
    return out


def _value_entry(v: OverrideVerdict) -> str | None:
    if v.key == "actor_rollout_ref.rollout.mode":
        return "rollout-mode-sync-removed"
    if v.key == "actor_rollout_ref.rollout.name":
        return "rollout-name-not-found"
    if v.key == "actor_rollout_ref.actor.use_torch_compile":
        return "actor-use-torch-compile-ignored"
    if "not a number" in v.message or "not true or false" in v.message:
        return "config-value-type-error"
    entry = entry_for_key(v.key, "")
    return entry or None


def _dedupe(findings: list[PreflightFinding]) -> list[PreflightFinding]:
    """One finding per message: a string where a number belongs breaks several steps the same way."""
    seen: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        key = (
            f.check,
            f.message
            if f.check != "config-value-type-error"
            else ",".join(v.key for v in f.values if v.source == "override"),
        )
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _against(v: OverrideVerdict, keys: dict[str, dict[str, Any]], release: str) -> OverrideVerdict:
    """check-overrides' verdict redone against the key set config-group choices composed (a Megatron section has
    keys the FSDP one lacks, and the other way round)."""
    from kb.keysets import release_keys

    parsed = parse_override(v.text)
    if parsed is None or parsed.prefix == "~":
        return v
    own, here = parsed.key in release_keys(release), parsed.key in keys
    if own == here:
        return v
    if here and parsed.prefix == "":
        return v.model_copy(update={"status": "ok", "fails": False, "message": "the chosen config group has this key"})
    if here and parsed.prefix == "+":
        return v.model_copy(update={"status": "remove_plus", "fails": True, "message": "Could not append to config"})
    if not here and parsed.prefix == "":
        return v.model_copy(
            update={"status": "unknown", "fails": True, "message": "the chosen config group has no such key"}
        )
    return v


def compose(
    overrides: Sequence[str],
    release: str,
    rejected: set[int],
    nnodes: int | None = None,
    gpus_per_node: int | None = None,
    keys: dict[str, dict[str, Any]] | None = None,
) -> Composed:
    """The release's config with the overrides Hydra accepts applied in order."""
    from kb.valuecheck import parse_value

    cfg = Composed(release, keys)
    for i, text in enumerate(overrides):
        if i in rejected:
            continue
        parsed = parse_override(text)
        if parsed is None:
            continue
        if parsed.prefix == "~":
            cfg.delete(parsed.key)
            continue
        if parsed.value is None:
            continue
        value: Any
        if PLACEHOLDER.search(parsed.value):
            value = Unknown(f"{parsed.value} is a shell variable the input does not assign")
        else:
            value = parse_value(f"{parsed.key}={parsed.value}")
        cfg.set(parsed.key, value, "override", text)
    for key, given in (("trainer.nnodes", nnodes), ("trainer.n_gpus_per_node", gpus_per_node)):
        if given is not None and not any((p := parse_override(t)) and p.key == key for t in overrides):
            cfg.set(key, given, "option", f"--{'nnodes' if key == 'trainer.nnodes' else 'gpus-per-node'} {given}")
    return cfg


def preflight(
    overrides: Sequence[str],
    verl_version: str | None = None,
    *,
    nnodes: int | None = None,
    gpus_per_node: int | None = None,
    placeholders: Sequence[str] = (),
    notes: Sequence[str] = (),
    version_source: str = "option",
    path_exists: Callable[[str], bool] | None = None,
) -> PreflightResult:
    """What verl ``verl_version`` would say about a launch with ``overrides``: the findings in verl's order.
    ``path_exists`` says whether a local path exists where the job runs (default: on this machine)."""
    release = release_for(verl_version)
    texts = list(overrides)
    choices = [group_choice(t, release) for t in texts]
    plain = [t for t, c in zip(texts, choices, strict=True) if c is None]
    keys, group_notes = base_keys(release, [c for c in choices if c is not None])
    report = check_overrides(plain, release, "ppo_trainer")  # what preflight composes, unless groups swap sections
    verdicts = report.verdicts
    if any(choices):
        verdicts = [_against(v, keys, release) for v in verdicts]
    problems = hydra_problems(verdicts, release, keys)
    rejected = {p.index for p in problems}
    # Hydra parses every override, then builds the defaults list (the group choices), then applies the rest
    findings = [_hydra_finding(p, release) for p in problems if p.phase < 2]
    findings += [_group_finding(c, release) for c in choices if c is not None and c.error is not None]
    findings += [_hydra_finding(p, release) for p in problems if p.phase >= 2]
    cfg = compose(plain, release, rejected, nnodes, gpus_per_node, keys)
    if path_exists is not None:
        cfg.path_exists = path_exists
    skipped: list[str] = []
    names = [s.__name__ for s in steps(release)]
    later: list[PreflightFinding] = []
    for name, (violation, ctx, why) in zip(names, run_steps(cfg), strict=True):
        if why is not None:
            skipped.append(why)
        if violation is None:
            continue
        stage = _LATER_STEPS.get(name, "validate")
        finding = _step_finding(violation, ctx, cfg, stage)
        (findings if stage == "validate" else later).append(finding)
    findings += later
    findings = _dedupe(findings)
    findings += _value_findings(verdicts, rejected, release)
    all_notes = list(notes) + group_notes
    all_notes += [f"not checked: {why}" for why in dict.fromkeys(skipped)]
    if verl_version is not None and verl_version != release:
        all_notes.append(f"verl {verl_version} is checked with the rules and config of verl {release}")
    return PreflightResult(
        kb_version=__version__,
        verl_version=verl_version or release,
        release_checked=release,
        version_source=version_source,  # type: ignore[arg-type]
        starts=not any(f.severity == "error" for f in findings),
        fails_later=any(f.severity == "later" for f in findings),
        overrides=texts,
        placeholders=list(placeholders),
        notes=all_notes,
        findings=findings,
    )
