"""The extractive answer: an entry told as Markdown for the user's facts (cause, conditions, the fix for
their verl version, how to check it worked, what to tell us), or the abstention with the closest entries."""

from __future__ import annotations

import re

from kb.ask.models import Citation, Facts, rel_path
from kb.engine import entry_excludes, rendered_env, rendered_overrides
from kb.entry import Entry, EnvCheck, GpuCheck, GpuNotCheck, OverrideCheck, PlatformCheck, VersionCheck
from kb.result import ConditionResult, Match, RenderedOverride, SimilarIssue
from kb.scoring import ANSWER_MARGIN


def paragraphs(text: str, limit: int) -> str:
    """Whole paragraphs of ``text`` up to about ``limit`` characters (at least the first)."""
    out: list[str] = []
    size = 0
    for para in (p.strip() for p in re.split(r"\n\s*\n", text.strip())):
        if not para:
            continue
        if out and size + len(para) > limit and size >= 250:  # a short lead-in keeps the list it introduces
            break
        out.append(para)
        size += len(para)
    return "\n\n".join(out)


def condition_question(entry: Entry, index: int) -> str:
    cond = entry.meta.conditions[index]
    check = cond.check
    if isinstance(check, VersionCheck):
        return f"which {check.version} version you run"
    if isinstance(check, GpuCheck | GpuNotCheck):
        return "which GPU model you run on"
    if isinstance(check, PlatformCheck):
        return "which CPU architecture the machine has (x86_64 or aarch64/arm64)"
    if isinstance(check, OverrideCheck):
        return f"whether (and to what) you set `{check.override}` on the command line"
    if isinstance(check, EnvCheck):
        return f"whether `{check.env}` is set in the job's environment"
    text = cond.text.rstrip(".")
    return f"whether this holds for you: {text[0].lower() + text[1:]}"


def version_spread(entry: Entry) -> list[tuple[str, str]]:
    """(range, override line) per range when the entry's overrides differ between verl versions."""
    per_range: dict[str, list[str]] = {}
    for ov in rendered_overrides(entry, None):
        per_range.setdefault(ov.verl, []).append(ov.line)
    if len(per_range) < 2:
        return []
    return [(spec, line) for spec, lines in per_range.items() for line in lines]


def compose(
    entry: Entry,
    match: Match,
    facts: Facts,
    conditions: list[ConditionResult],
    overrides: list[RenderedOverride],
    missing: list[str],
    others: list[Citation],
    similar: list[SimilarIssue],
    followup: bool,
) -> str:
    out: list[str] = []
    lead = "" if match.verdict == "match" else " (the closest fit; confirm the details below)"
    out.append(f"**{entry.title}** [{entry.id}]{lead}")
    if followup:
        said = [f"verl {facts.verl_version}" if facts.verl_version else "", facts.platform or "", facts.gpu or ""]
        said_text = ", ".join(s for s in said if s)
        out.append(f"Continuing with [{entry.id}]" + (f" for {said_text}." if said_text else "."))
    cause = paragraphs(entry.cause, 900)
    if cause:
        out.append("**Why it happens.** " + cause)
    if conditions:
        marks = {"holds": "yes", "fails": "no", "unknown": "unknown"}
        rows = [f"- {c.text} — {marks[c.status]}" for c in conditions]
        out.append("**When it applies:**\n" + "\n".join(rows))
        if any(c.status == "fails" for c in conditions):
            out.append("A condition does not hold for what you described, so this may not be your problem.")
    version = facts.verl_version
    if version and entry_excludes(entry, version):
        out.append(f"Note: this entry covers verl `{entry.meta.verl}`, and you are on {version}.")
    fix_head = f"**Fix for verl {version}:**" if version else "**Fix:**"
    fix: list[str] = []
    ranges = list(dict.fromkeys(o.verl for o in overrides))
    if overrides and (version or len(ranges) == 1):
        fix.append("```\n" + "\n".join(o.line for o in overrides) + "\n```")
    elif overrides:
        for spec in ranges:
            lines = "\n".join(o.line for o in overrides if o.verl == spec)
            fix.append(f"On verl {spec}:\n```\n{lines}\n```")
    elif version and entry.meta.fix.overrides:
        fix.append(f"(this entry has no override line for verl {version})")
    env = rendered_env(entry)
    if env:
        fix.append("In the environment:\n```\n" + "\n".join(f"export {e.line}" for e in env) + "\n```")
        fix += [f"- `{e.name}`: {e.note}" for e in env if e.note]
    fix += [f"- {a}" for a in entry.meta.fix.actions]
    if fix:
        out.append(fix_head + "\n" + "\n".join(fix))
    check = paragraphs(entry.sections.get("Check that it worked", ""), 600)
    if check:
        out.append("**Check that it worked.** " + check)
    if missing:
        out.append("**To be sure, tell me** " + "; ".join(missing) + ".")
    if others:
        first, *rest = others
        if first.verdict == "match" or match.confidence - first.confidence < ANSWER_MARGIN:
            out.append(f"Another entry fits about as well, check which one you see: [{first.id}] {first.title}")
        else:
            rest = others
        if rest:
            out.append("Also possibly relevant: " + "; ".join(f"[{c.id}] {c.title}" for c in rest))
    if similar:
        out.append("**Similar past issues:**\n" + "\n".join(issue_line(i) for i in similar))
    links = [s for s in entry.meta.sources if s.startswith(("http://", "https://"))][:4]
    out.append(f"Source: [{entry.id}] ({rel_path(entry.path)})" + (" · " + " · ".join(links) if links else ""))
    return "\n\n".join(out)


def fact_changes(before: Facts, now: Facts) -> list[str]:
    """What ``now`` says that ``before`` did not (or says otherwise), one short phrase each."""

    def changed(name: str, old: str | None, new: str | None) -> list[str]:
        if new is None or new == old:
            return []
        return [f"{name}: {new} " + ("(not given before)" if old is None else f"(was {old})")]

    out = changed("verl version", before.verl_version, now.verl_version)
    out += changed("platform", before.platform, now.platform)
    out += changed("GPU", before.gpu, now.gpu)
    for pkg, version in now.versions.items():
        if pkg != "verl":
            out += changed(pkg, before.versions.get(pkg), version)
    for key, value in now.overrides.items():
        out += changed(f"`{key}`", before.overrides.get(key), value)
    out += [f"`{name}` set in the environment" for name in now.env if name not in before.env]
    return out


def compose_followup(
    entry: Entry,
    facts: Facts,
    said: list[str],
    conditions: list[ConditionResult],
    before: list[ConditionResult],
    overrides: list[RenderedOverride],
    overrides_before: list[RenderedOverride],
    missing: list[str],
) -> str:
    """A follow-up to an answer the user has seen about the same entry: what the new facts change (the
    conditions they settle, the fix for another release), not the whole entry again."""
    marks = {"holds": "yes", "fails": "no", "unknown": "unknown"}
    out = [f"**{entry.title}** [{entry.id}]"]
    settled = [
        f"- {c.text} — now {marks[c.status]} (was {marks[b.status]})"
        for c, b in zip(conditions, before, strict=True)
        if c.status != b.status
    ]
    version = facts.verl_version
    new_fix = [o.line for o in overrides] != [o.line for o in overrides_before]
    if not said and not settled and not new_fix:
        out.append("Nothing in your last message changes the answer above.")
    else:
        out.append("What changes with what you added:\n" + "\n".join([f"- {s}" for s in said] + settled))
        if any(c.status == "fails" for c in conditions):
            out.append("A condition does not hold for what you described, so this may not be your problem.")
        if version and entry_excludes(entry, version) and said:
            out.append(f"Note: this entry covers verl `{entry.meta.verl}`, and you are on {version}.")
        if new_fix and overrides:
            head = f"**Fix for verl {version}:**" if version else "**Fix:**"
            out.append(head + "\n```\n" + "\n".join(o.line for o in overrides) + "\n```")
        elif new_fix and version and entry.meta.fix.overrides:
            out.append(f"(this entry has no override line for verl {version})")
        elif not new_fix:
            out.append("The fix above stays as it is.")
    if missing:
        out.append("**To be sure, tell me** " + "; ".join(missing) + ".")
    source = f"[{entry.id}] ({rel_path(entry.path)})"
    out.append(f"The cause and the rest of the fix are in the answer above. Source: {source}")
    return "\n\n".join(out)


def issue_line(issue: SimilarIssue) -> str:
    state = f", {issue.state}" if issue.state else ""
    return f"- #{issue.number} {issue.title} ({issue.url}{state})"


def compose_abstain(closest: list[Citation], similar: list[SimilarIssue]) -> str:
    out = ["I don't know a problem in the knowledge base that fits this well enough to answer it."]
    if not closest:
        out.append("No entry comes close.")
    else:
        rows = [
            f"- [{c.id}] {c.title}" + (f" (confidence {c.confidence:.2f})" if c.confidence else "") for c in closest
        ]
        out.append("The closest entries:\n" + "\n".join(rows))
    if similar:
        issues = "\n".join(issue_line(i) for i in similar)
        out.append("Similar past issues (from the imported issue archive):\n" + issues)
    out.append(
        "If you have a traceback or the log lines around the error, paste them; the failure signatures are "
        "matched exactly. Mention your verl version too."
    )
    return "\n\n".join(out)
