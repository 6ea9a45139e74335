"""Answers to questions from the knowledge base (``verl-doctor ask``, ``POST /v1/ask``, the chat endpoint).

Retrieval is the diagnosis engine itself: semantic + lexical search for words, and the rules engine as
well when a message holds a traceback or log. The answer is composed from the chosen entry - its
cause, its conditions (asking for the facts that are unknown), the override lines for the user's verl
version, the actions and the "check that it worked" step - and cites entry ids and links. A follow-up
("and on arm64?", "I'm on 0.5") is answered from the topic of the earlier turns, with the facts of
every turn. When nothing fits, the answer says so and lists the closest entries. An optional LLM may
reword the answer from the retrieved entries only (see :mod:`kb.llm`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from kb.distill import is_question
from kb.engine import POSSIBLE_THRESHOLD, Diagnoser, rendered_env, rendered_overrides
from kb.entry import Entry
from kb.llm import Grounding, LLMClient, LLMError, check_reply
from kb.loglines import Line, split_lines
from kb.result import ConditionResult, Match, RenderedOverride, Result, SimilarIssue
from kb.rules import check_condition
from kb.signals import extract_signals
from kb.versions import VersionError, in_range, parse_version

#: A question in words is answered (not abstained on) from this confidence; a log needs the engine's "match".
ANSWER_THRESHOLD = 0.45
#: Two entries closer than this are both cited ("another entry fits about as well").
_MARGIN = 0.04
#: FAQ search hits below this fused score are not offered as "closest" when abstaining.
_SEARCH_FLOOR = 0.45
MAX_MESSAGE_CHARS = 200_000

Role = Literal["system", "user", "assistant"]


class ChatMessage(BaseModel):
    role: Role
    content: str = Field(max_length=MAX_MESSAGE_CHARS)

    @field_validator("content", mode="before")
    @classmethod
    def _parts_to_text(cls, value: Any) -> Any:
        """OpenAI content parts (``[{"type": "text", "text": ...}]``) become one string."""
        if isinstance(value, list):
            return "\n".join(
                str(p.get("text", "")) for p in value if isinstance(p, dict) and p.get("type", "text") == "text"
            )
        return "" if value is None else value


class AskRequest(BaseModel):
    """The conversation as ``messages``, or (as the MCP ``ask`` tool takes it) ``question`` with the user's
    ``earlier`` messages."""

    messages: list[ChatMessage] = Field(
        default_factory=list, max_length=100, description="the conversation, oldest first (or give `question`)"
    )
    question: str | None = Field(
        default=None, max_length=MAX_MESSAGE_CHARS, description="a question in words (instead of `messages`)"
    )
    earlier: list[Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]] | None = Field(
        default=None, max_length=50, description="with `question`: the user's earlier messages, oldest first"
    )
    verl_version: str | None = Field(default=None, max_length=40, description="overrides are rendered for it")
    top: int = Field(default=3, ge=1, le=10, description="how many closest entries to list when abstaining")

    @model_validator(mode="after")
    def _conversation(self) -> AskRequest:
        if self.question is not None or self.earlier:
            if self.messages:
                raise ValueError("give `messages`, or `question` (with `earlier`), not both")
            turns = [*(self.earlier or []), self.question or ""]
            self.messages = [ChatMessage(role="user", content=t) for t in turns if t.strip()]
        if not self.messages:
            raise ValueError("`messages` (or `question`) is required")
        return self


class Citation(BaseModel):
    id: str
    title: str
    area: str
    confidence: float
    verdict: Literal["match", "possible"]
    path: str = Field(description="the entry's Markdown file in the corpus")
    links: list[str] = Field(description="the entry's sources that are web links")


class Facts(BaseModel):
    """What the conversation says about the user's set-up (the last mention of each wins)."""

    verl_version: str | None = None
    platform: str | None = None
    gpu: str | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    overrides: dict[str, str] = Field(default_factory=dict)
    env: list[str] = Field(default_factory=list)


class AskAnswer(BaseModel):
    answer: str = Field(description="the answer as Markdown")
    citations: list[Citation] = Field(description="the entries the answer is built from, best first")
    abstained: bool = Field(description="no entry fits well enough; `closest` lists the nearest ones")
    closest: list[Citation] = Field(default_factory=list, description="when abstaining: the nearest entries")
    facts: Facts
    missing_facts: list[str] = Field(default_factory=list, description="facts the answer asks the user for")
    conditions: list[ConditionResult] = Field(default_factory=list, description="the cited entry's conditions")
    overrides: list[RenderedOverride] = Field(default_factory=list, description="override lines of the answer")
    similar_issues: list[SimilarIssue] = Field(default_factory=list)
    followup: bool = Field(default=False, description="the topic came from an earlier turn")
    mode: Literal["extractive", "llm"] = "extractive"
    llm_note: str | None = Field(default=None, description="why the LLM's reply was not used, when it was not")
    kb_version: str


# --------------------------------------------------------------------------- facts

_VERL_VERSION = [
    re.compile(r"\bverl\s*(?:==|=|@|:)?\s*(?:version\s*)?v?(\d+\.\d+(?:\.\d+)?(?:\.?(?:dev|post|rc)\d*)?)\b", re.I),
    re.compile(
        r"\b(?:i'?m|i am|we'?re|we are|am|are|is|running|run|using|use|on|with|version|upgraded to|downgraded to)"
        r"\s+(?:on\s+)?v?(0\.\d{1,2}(?:\.\d+)?)\b(?!\s*(?:gb|gib|mb|%|x\b|s\b|sec))",
        re.I,
    ),
]
_GRACE = {"GH200", "GB200"}
_STOP = frozenset(
    re.findall(
        r"\S+",
        "a an and are as at be but by can do does for from had has have how i i'm im if in is it its me my no not "
        "now of on or so that the then this to us was we what when where which who why will with would you your "
        "what's about also again else instead same still too ok okay thanks thank please yes hi hello hmm here "
        "there m use using run running got get set machine box node nodes cluster our",
    )
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*")


def _verl_version_in(text: str) -> str | None:
    found: tuple[int, str] | None = None
    for rx in _VERL_VERSION:
        for m in rx.finditer(text):
            try:
                parse_version(m.group(1))
            except VersionError:
                continue
            if found is None or m.start() >= found[0]:
                found = (m.start(), m.group(1))
    return found[1] if found else None


def extract_facts(turns: Sequence[str], verl_version: str | None = None) -> tuple[Facts, list[Line]]:
    """Facts from every user turn (later turns win), and the lines of all turns for the condition checks."""
    facts = Facts()
    for turn in turns:
        signals = extract_signals(split_lines(turn))
        version = signals.versions.get("verl") or _verl_version_in(turn)
        if version:
            facts.verl_version = version
        if signals.platform:
            facts.platform = signals.platform
        if signals.gpus:
            facts.gpu = signals.gpus[0]
            if facts.platform is None and facts.gpu in _GRACE:
                facts.platform = "aarch64"
        facts.versions.update({k: v for k, v in signals.versions.items() if k != "verl"})
        facts.overrides.update(_keys_in_words(turn))
        facts.overrides.update(signals.overrides)
        facts.env += [e for e in signals.env if e not in facts.env]
    if verl_version:
        facts.verl_version = verl_version.strip()
    if facts.verl_version:
        facts.versions["verl"] = facts.verl_version
    lines = split_lines("\n".join(turns))
    return facts, lines


_KEY_IN_WORDS = re.compile(
    r"(?<![\w.+~])([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+)\s*(?:=|\bis\b|\bof\b|\bto\b|:)\s*([\w./-]+)", re.I
)


def _keys_in_words(text: str) -> dict[str, str]:
    """Dotted config keys with a value, as people write them ("rollout.n is 5", "trainer.nnodes=2")."""
    return {m.group(1): m.group(2).rstrip(".") for m in _KEY_IN_WORDS.finditer(text) if not m.group(1)[0].isdigit()}


def _fact_signals(facts: Facts, lines: list[Line], entry: Entry | None = None) -> Any:
    signals = extract_signals(lines)
    signals.versions.update(facts.versions)
    signals.platform = facts.platform or signals.platform
    if facts.gpu and facts.gpu not in signals.gpus:
        signals.gpus.insert(0, facts.gpu)
    signals.overrides.update(facts.overrides)
    if entry is not None:  # a short key ("rollout.n") answers a condition on the full one
        from kb.entry import OverrideCheck

        for cond in entry.meta.conditions:
            check = cond.check
            if isinstance(check, OverrideCheck) and check.override not in signals.overrides:
                for key, value in facts.overrides.items():
                    if check.override.endswith("." + key):
                        signals.overrides[check.override] = value
    return signals


def content_words(text: str) -> list[str]:
    """Words that carry a topic: not stop words, not versions, not facts like 'arm64' or a GPU name."""
    words = []
    for w in _WORD.findall(text.lower()):
        w = w.strip(".+-")
        if len(w) <= 1 or w in _STOP or w in ("verl", "version", "arm64", "aarch64", "x86_64", "amd64", "arm"):
            continue
        if re.fullmatch(r"v?\d+(\.\d+)*", w) or w.upper() in _GRACE or re.fullmatch(r"[a-z]?\d{2,4}[a-z]?", w):
            continue
        words.append(w)
    return words


def is_followup(text: str) -> bool:
    """Only facts or a nudge ("and on arm64?", "I'm on 0.5", "what about 0.4?"): the topic is an earlier turn's."""
    if len(text) > 300 or "\n" in text.strip():
        return False
    return not content_words(text)


# --------------------------------------------------------------------------- retrieval


def _answerable(result: Result, question: bool = True) -> Match | None:
    """The entry to answer from: a confident match, or for a question in words the best one above the threshold.

    A log or traceback is only answered from a "match": the engine never claims one on similarity alone.
    """
    if not result.matches:
        return None
    best = result.matches[0]
    if best.verdict == "match" or (question and best.confidence >= ANSWER_THRESHOLD):
        return best
    return None


def _is_question(text: str) -> bool:
    lines = split_lines(text)
    return is_question(lines, extract_signals(lines))


def _runner_up(result: Result) -> Match | None:
    """A second entry that fits about as well as the first (both are cited then)."""
    if len(result.matches) < 2:
        return None
    first, second = result.matches[0], result.matches[1]
    if second.confidence >= ANSWER_THRESHOLD and first.confidence - second.confidence < _MARGIN:
        return second
    return None


def _citation(entry: Entry, m: Match | None) -> Citation:
    conf = m.confidence if m else 0.0
    return Citation(
        id=entry.id,
        title=entry.title,
        area=entry.area,
        confidence=conf,
        verdict=m.verdict if m else "possible",
        path=_rel_path(entry.path),
        links=[s for s in entry.meta.sources if s.startswith(("http://", "https://"))],
    )


def _rel_path(path: str) -> str:
    idx = path.replace("\\", "/").rfind("/corpus/")
    return path[idx + 1 :] if idx >= 0 else path


# --------------------------------------------------------------------------- composing


def _paragraphs(text: str, limit: int) -> str:
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


def _condition_question(entry: Entry, index: int) -> str:
    from kb.entry import EnvCheck, GpuCheck, GpuNotCheck, OverrideCheck, PlatformCheck, VersionCheck

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


def _version_spread(entry: Entry) -> list[tuple[str, str]]:
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
    cause = _paragraphs(entry.cause, 900)
    if cause:
        out.append("**Why it happens.** " + cause)
    if conditions:
        marks = {"holds": "yes", "fails": "no", "unknown": "unknown"}
        rows = [f"- {c.text} — {marks[c.status]}" for c in conditions]
        out.append("**When it applies:**\n" + "\n".join(rows))
        if any(c.status == "fails" for c in conditions):
            out.append("A condition does not hold for what you described, so this may not be your problem.")
    version = facts.verl_version
    if version and _excludes(entry, version):
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
    check = _paragraphs(entry.sections.get("Check that it worked", ""), 600)
    if check:
        out.append("**Check that it worked.** " + check)
    if missing:
        out.append("**To be sure, tell me** " + "; ".join(missing) + ".")
    if others:
        first, *rest = others
        if first.verdict == "match" or match.confidence - first.confidence < _MARGIN:
            out.append(f"Another entry fits about as well, check which one you see: [{first.id}] {first.title}")
        else:
            rest = others
        if rest:
            out.append("Also possibly relevant: " + "; ".join(f"[{c.id}] {c.title}" for c in rest))
    if similar:
        out.append("**Similar past issues:**\n" + "\n".join(_issue_line(i) for i in similar))
    links = [s for s in entry.meta.sources if s.startswith(("http://", "https://"))][:4]
    out.append(f"Source: [{entry.id}] ({_rel_path(entry.path)})" + (" · " + " · ".join(links) if links else ""))
    return "\n\n".join(out)


def _issue_line(issue: SimilarIssue) -> str:
    state = f", {issue.state}" if issue.state else ""
    return f"- #{issue.number} {issue.title} ({issue.url}{state})"


def _excludes(entry: Entry, version: str) -> bool:
    try:
        return not in_range(version, entry.meta.verl)
    except VersionError:
        return False


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
        issues = "\n".join(_issue_line(i) for i in similar)
        out.append("Similar past issues (from the imported issue archive):\n" + issues)
    out.append(
        "If you have a traceback or the log lines around the error, paste them; the failure signatures are "
        "matched exactly. Mention your verl version too."
    )
    return "\n\n".join(out)


# --------------------------------------------------------------------------- the LLM


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


def _llm_messages(briefs: list[str], messages: Sequence[ChatMessage], facts: Facts) -> list[dict[str, str]]:
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
        texts += [ov.line for v in _releases() for ov in rendered_overrides(e, v)]
    return texts


def _releases() -> tuple[str, ...]:
    from kb.versions import KNOWN_RELEASES

    return KNOWN_RELEASES


def _with_sources(reply: str, cited: list[Entry]) -> str:
    if any(f"[{e.id}]" in reply for e in cited):
        return reply
    return reply.rstrip() + "\n\nSources: " + "; ".join(f"[{e.id}] ({_rel_path(e.path)})" for e in cited)


# --------------------------------------------------------------------------- the whole


def ask(
    diagnoser: Diagnoser,
    messages: Sequence[ChatMessage],
    *,
    verl_version: str | None = None,
    top: int = 3,
    llm: LLMClient | None = None,
) -> AskAnswer:
    """Answer the last user message of a conversation from the knowledge base."""
    turns = [m.content for m in messages if m.role == "user" and m.content.strip()]
    if not turns:
        raise ValueError("the conversation has no user message with text")
    if verl_version is not None:
        parse_version(verl_version)  # raises VersionError (a ValueError) for nonsense
    facts, all_lines = extract_facts(turns, verl_version)
    last = turns[-1]
    r_last = diagnoser.diagnose(last, top=5)
    q_last = _is_question(last)
    chosen: Result | None = r_last if _answerable(r_last, q_last) and not is_followup(last) else None
    followup = False
    topic_is_question = q_last
    earlier: list[Result] = []
    topic_text = last
    if len(turns) > 1 and chosen is None:
        for prev in reversed(turns[:-1][-4:]):
            if is_followup(prev):
                continue
            r_prev = diagnoser.diagnose(prev, top=5)
            earlier.append(r_prev)
            if topic_text == last:
                topic_text = prev
            if _answerable(r_prev, _is_question(prev)):
                chosen, topic_is_question, followup = r_prev, _is_question(prev), True
                break
    if chosen is None and _answerable(r_last, q_last):
        chosen, topic_is_question = r_last, q_last
    similar = _merge_similar([r_last, *earlier])
    if chosen is None:
        closest = _closest(diagnoser, [r_last, *earlier], topic_text[:500], top)
        return AskAnswer(
            answer=compose_abstain(closest, similar),
            citations=[],
            abstained=True,
            closest=closest,
            facts=facts,
            similar_issues=similar,
            kb_version=diagnoser.kb_version,
        )
    best = _answerable(chosen, topic_is_question)
    assert best is not None
    entry = diagnoser.entries[best.id]
    signals = _fact_signals(facts, all_lines, entry)
    conditions = [
        ConditionResult(text=c.text, status=check_condition(c, signals, all_lines)) for c in entry.meta.conditions
    ]
    version = facts.verl_version
    overrides = rendered_overrides(entry, version)
    missing = [_condition_question(entry, i) for i, c in enumerate(conditions) if c.status == "unknown"]
    if version is None and _version_spread(entry):
        missing.insert(0, "which verl version you run (the override lines differ between versions; see the fix)")
    missing = list(dict.fromkeys(missing))[:4]
    close = _runner_up(chosen)
    cited = [best, *([close] if close else [m for m in chosen.matches[1:] if m.verdict == "match"][:1])]
    citations = [_citation(diagnoser.entries[m.id], m) for m in cited]
    others = [
        _citation(diagnoser.entries[m.id], m)
        for m in chosen.matches[1:]
        if m.id not in {c.id for c in citations} and m.confidence >= POSSIBLE_THRESHOLD
    ][:2]
    answer = AskAnswer(
        answer=compose(entry, best, facts, conditions, overrides, missing, citations[1:] + others, similar, followup),
        citations=citations,
        abstained=False,
        closest=others,
        facts=facts,
        missing_facts=missing,
        conditions=conditions,
        overrides=overrides,
        similar_issues=similar,
        followup=followup,
        kb_version=diagnoser.kb_version,
    )
    if llm is not None:
        _llm_rewrite(answer, llm, [diagnoser.entries[c.id] for c in citations], messages, turns, facts, conditions)
    return answer


def _llm_rewrite(
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
        reply = llm.complete(_llm_messages(briefs, messages, facts))
    except LLMError as exc:
        answer.llm_note = f"LLM unavailable ({exc}); the extractive answer is shown"
        return
    problems = check_reply(reply, Grounding(grounding_texts(cited, turns)))
    if problems:
        answer.llm_note = "LLM reply rejected: " + "; ".join(problems[:3])
        return
    answer.answer = _with_sources(reply, cited)
    answer.mode = "llm"


def _merge_similar(results: list[Result]) -> list[SimilarIssue]:
    seen: dict[int, SimilarIssue] = {}
    for r in results:
        for issue in r.similar_issues:
            if issue.number not in seen or issue.score > seen[issue.number].score:
                seen[issue.number] = issue
    return sorted(seen.values(), key=lambda i: -i.score)[:3]


def _closest(diagnoser: Diagnoser, results: list[Result], query: str, top: int) -> list[Citation]:
    """The nearest entries: the engine's 'possible' ones, then FAQ search hits for the question."""
    best: dict[str, Match] = {}
    for r in results:
        for m in r.matches:
            if m.id not in best or m.confidence > best[m.id].confidence:
                best[m.id] = m
    ranked = sorted(best.values(), key=lambda m: (-m.confidence, m.id))[:top]
    out = [_citation(diagnoser.entries[m.id], m) for m in ranked]
    if len(out) < top:
        from kb.search import search_entries

        for hit in search_entries(diagnoser, query, k=top * 2):
            if len(out) >= top:
                break
            if hit.score >= _SEARCH_FLOOR and hit.id not in {c.id for c in out}:
                out.append(_citation(diagnoser.entries[hit.id], None))
    return out


# --------------------------------------------------------------------------- evaluation


class AskEvalReport(BaseModel):
    """`verl-doctor eval --ask`: the engine figures over the ask path, plus what only answers have."""

    report: Any = Field(description="the EvalReport over the ranked citations (then the closest entries)")
    answered: int = Field(description="answers that cite an entry (did not abstain)")
    abstained: int
    cited_or_abstained: float = Field(description="share of answers that cite at least one entry or abstain")
    answered_precision: float = Field(description="of answered positives, the share whose first citation is expected")
    llm_used: int = 0
    llm_rejected: int = 0
    unsupported_overrides: list[str] = Field(
        default_factory=list, description="case: override in an answer that no cited entry or user message holds"
    )


def run_ask_eval(diagnoser: Diagnoser, cases: list[Any], llm: LLMClient | None = None) -> AskEvalReport:
    from kb.evaluation import Case, run_eval

    answers: dict[str, AskAnswer] = {}

    def ranker(case: Case) -> tuple[list[str], bool, bool]:
        msgs = case.messages or [{"role": "user", "content": case.input}]
        answer = ask(diagnoser, [ChatMessage.model_validate(m) for m in msgs], llm=llm, top=3)
        answers[case.name] = answer
        got = list(dict.fromkeys([c.id for c in answer.citations] + [c.id for c in answer.closest]))
        return got, answer.abstained, not answer.abstained

    report = run_eval(diagnoser, cases, ranker)
    answered = [a for a in answers.values() if not a.abstained]
    grounded = sum(1 for a in answers.values() if a.citations or a.abstained)
    hits = sum(
        1
        for c in cases
        if c.expected and not answers[c.name].abstained and answers[c.name].citations[0].id in c.expected
    )
    answered_pos = sum(1 for c in cases if c.expected and not answers[c.name].abstained)
    unsupported: list[str] = []
    for c in cases:
        a = answers[c.name]
        if a.abstained:
            continue
        user = [m["content"] for m in (c.messages or [{"role": "user", "content": c.input}]) if m["role"] == "user"]
        allowed = grounding_texts([diagnoser.entries[x.id] for x in a.citations], user)
        from kb.llm import unsupported_overrides

        unsupported += [f"{c.name}: {t}" for t in unsupported_overrides(a.answer, allowed)]
    return AskEvalReport(
        report=report,
        answered=len(answered),
        abstained=len(answers) - len(answered),
        cited_or_abstained=grounded / len(answers) if answers else 1.0,
        answered_precision=hits / answered_pos if answered_pos else 1.0,
        llm_used=sum(1 for a in answers.values() if a.mode == "llm"),
        llm_rejected=sum(1 for a in answers.values() if a.llm_note and "rejected" in a.llm_note),
        unsupported_overrides=unsupported,
    )
