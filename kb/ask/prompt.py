"""The optional LLM's part: the entries as it sees them, its prompt, and the check that its reply says only
what the entries and the user said (else the extractive answer stands)."""

from __future__ import annotations

from collections.abc import Sequence

from kb.ask.models import AskAnswer, ChatMessage, Facts, rel_path
from kb.engine import rendered_env, rendered_overrides
from kb.entry import Entry
from kb.llm import Grounding, LLMClient, LLMError, check_reply
from kb.result import ConditionResult
from kb.versions import KNOWN_RELEASES


def entry_brief(entry: Entry, version: str | None, conditions: list[ConditionResult]) -> str:
    """One entry as the LLM sees it: the facts it may use, override lines rendered for the user's version."""
    lines = [f"### entry: {entry.id}", f"title: {entry.title}", f"applies to verl: {entry.meta.verl}"]
    lines.append("why it happens:\n" + entry.cause.strip())
    if conditions:
        lines.append("conditions (status for this user):")
        lines += [f"- {c.text} [{c.status}]" for c in conditions]
    overrides = rendered_overrides(entry, version)
    lines.append(f"overrides for verl {version or 'each range'}:")
    lines += [o.line if version else f"{o.line}    (verl {o.verl})" for o in overrides] or ["(none)"]
    env = rendered_env(entry)
    if env:
        lines.append("environment variables:")
        lines += [f"export {e.line}" + (f"    ({e.note})" if e.note else "") for e in env]
    lines.append("")
    if entry.meta.fix.actions:
        lines.append("actions:")
        lines += [f"- {a}" for a in entry.meta.fix.actions]
    lines.append("check that it worked:\n" + entry.sections.get("Check that it worked", "").strip())
    links = [s for s in entry.meta.sources if s.startswith("http")]
    if links:
        lines.append("links: " + " ".join(links))
    return "\n".join(lines)


_SYSTEM = (
    "You are verl-doctor, an assistant for failures of verl (RL post-training of LLMs). Answer ONLY from the "
    "knowledge-base entries given below; they are the whole of your knowledge. Copy override lines exactly as "
    "written under 'overrides for verl ...' (they are rendered for the user's verl version, '+' included). Never "
    "write a config key, value or log line that is not in the entries or in the user's messages. Cite the entry "
    "id in square brackets, like [entry-id]. If a condition's status is 'unknown', ask the user for that fact. "
    "Be brief."
)


def llm_messages(briefs: list[str], messages: Sequence[ChatMessage], facts: Facts) -> list[dict[str, str]]:
    context = "\n\n".join(briefs)
    known = f"Known about the user: verl {facts.verl_version or 'version unknown'}"
    if facts.platform:
        known += f", platform {facts.platform}"
    if facts.gpu:
        known += f", GPU {facts.gpu}"
    out = [{"role": "system", "content": f"{_SYSTEM}\n\n{known}.\n\nENTRIES:\n\n{context}"}]
    out += [{"role": m.role, "content": m.content} for m in messages if m.role in ("user", "assistant")][-8:]
    return out


def grounding_texts(entries: Sequence[Entry], user_turns: Sequence[str]) -> list[str]:
    """Everything an LLM reply may quote: the entries (all sections, actions, every rendered line) and the user."""
    texts = list(user_turns)
    for e in entries:
        texts.append(e.title)
        texts += list(e.sections.values())
        texts += list(e.meta.fix.actions)
        texts += [c.text for c in e.meta.conditions]
        texts += [o.line for o in rendered_overrides(e, None)]
        texts += [f"export {env.line}" for env in rendered_env(e)]
        texts += [ov.line for v in KNOWN_RELEASES for ov in rendered_overrides(e, v)]
    return texts


def with_sources(reply: str, cited: list[Entry]) -> str:
    if any(f"[{e.id}]" in reply for e in cited):
        return reply
    return reply.rstrip() + "\n\nSources: " + "; ".join(f"[{e.id}] ({rel_path(e.path)})" for e in cited)


def llm_rewrite(
    answer: AskAnswer,
    llm: LLMClient,
    cited: list[Entry],
    messages: Sequence[ChatMessage],
    turns: list[str],
    facts: Facts,
    conditions: list[ConditionResult],
) -> None:
    briefs = [entry_brief(e, facts.verl_version, conditions if i == 0 else []) for i, e in enumerate(cited)]
    try:
        reply = llm.complete(llm_messages(briefs, messages, facts))
    except LLMError as exc:
        answer.llm_note = f"LLM unavailable ({exc}); the extractive answer is shown"
        return
    problems = check_reply(reply, Grounding(grounding_texts(cited, turns)))
    if problems:
        answer.llm_note = "LLM reply rejected: " + "; ".join(problems[:3])
        return
    answer.answer = with_sources(reply, cited)
    answer.mode = "llm"
