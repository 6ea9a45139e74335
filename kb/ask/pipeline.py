"""``ask()``: the orchestration. Retrieval is the diagnosis engine itself (the last turn, else the topic of
an earlier one for a follow-up), then the chosen entry is composed for the conversation's facts, and an
optional LLM may reword it from the cited entries only."""

from __future__ import annotations

from collections.abc import Sequence

from kb.ask.compose import (
    compose,
    compose_abstain,
    compose_followup,
    condition_question,
    fact_changes,
    version_spread,
)
from kb.ask.facts import extract_facts, fact_signals, is_followup, is_question_text
from kb.ask.models import AskAnswer, ChatMessage, Citation, citation
from kb.ask.prompt import llm_rewrite
from kb.engine import Diagnoser, rendered_overrides
from kb.llm import LLMClient
from kb.result import ConditionResult, Match, Result, SimilarIssue
from kb.rules import check_condition
from kb.scoring import ANSWER_MARGIN, ANSWER_THRESHOLD, POSSIBLE_THRESHOLD, SEARCH_FLOOR
from kb.versions import parse_version


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
    q_last = is_question_text(last)
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
            if _answerable(r_prev, is_question_text(prev)):
                chosen, topic_is_question, followup = r_prev, is_question_text(prev), True
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
    signals = fact_signals(facts, all_lines, entry)
    conditions = [
        ConditionResult(text=c.text, status=check_condition(c, signals, all_lines)) for c in entry.meta.conditions
    ]
    version = facts.verl_version
    overrides = rendered_overrides(entry, version)
    missing = [condition_question(entry, i) for i, c in enumerate(conditions) if c.status == "unknown"]
    if version is None and version_spread(entry):
        missing = [q for q in missing if q != "which verl version you run"]  # asked below, with the reason
        missing.insert(0, "which verl version you run (the override lines differ between versions; see the fix)")
    missing = list(dict.fromkeys(missing))[:4]
    close = _runner_up(chosen)
    cited = [best, *([close] if close else [m for m in chosen.matches[1:] if m.verdict == "match"][:1])]
    citations = [citation(diagnoser.entries[m.id], m) for m in cited]
    others = [
        citation(diagnoser.entries[m.id], m)
        for m in chosen.matches[1:]
        if m.id not in {c.id for c in citations} and m.score >= POSSIBLE_THRESHOLD
    ][:2]
    if followup and _answered_before(messages, entry.id):
        # The user has the earlier answer about this entry: say what the last turn changes, not all of it again.
        facts_before, lines_before = extract_facts(turns[:-1], verl_version)
        signals_before = fact_signals(facts_before, lines_before, entry)
        before = [
            ConditionResult(text=c.text, status=check_condition(c, signals_before, lines_before))
            for c in entry.meta.conditions
        ]
        text = compose_followup(
            entry,
            facts,
            fact_changes(facts_before, facts),
            conditions,
            before,
            overrides,
            rendered_overrides(entry, facts_before.verl_version),
            missing,
        )
    else:
        text = compose(entry, best, facts, conditions, overrides, missing, citations[1:] + others, similar, followup)
    answer = AskAnswer(
        answer=text,
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
        llm_rewrite(answer, llm, [diagnoser.entries[c.id] for c in citations], messages, turns, facts, conditions)
    return answer


def _answered_before(messages: Sequence[ChatMessage], entry_id: str) -> bool:
    """The assistant's last answer before the last user turn cites ``entry_id`` (so the user has read it)."""
    seen_last_user = False
    for m in reversed(messages):
        if m.role == "user" and m.content.strip() and not seen_last_user:
            seen_last_user = True
        elif m.role == "assistant" and seen_last_user:
            return f"[{entry_id}]" in m.content
    return False


def _answerable(result: Result, question: bool = True) -> Match | None:
    """The entry to answer from: a confident match, or for a question in words the best one above the threshold.

    A log or traceback is only answered from a "match": the engine never claims one on similarity alone.
    """
    if not result.matches:
        return None
    best = result.matches[0]
    if best.verdict == "match" or (question and best.score >= ANSWER_THRESHOLD):
        return best
    return None


def _runner_up(result: Result) -> Match | None:
    """A second entry that fits about as well as the first (both are cited then)."""
    if len(result.matches) < 2:
        return None
    first, second = result.matches[0], result.matches[1]
    if second.score >= ANSWER_THRESHOLD and first.score - second.score < ANSWER_MARGIN:
        return second
    return None



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
    out = [citation(diagnoser.entries[m.id], m) for m in ranked]
    if len(out) < top:
        from kb.search import search_entries

        for hit in search_entries(diagnoser, query, k=top * 2):
            if len(out) >= top:
                break
            if hit.score >= SEARCH_FLOOR and hit.id not in {c.id for c in out}:
                out.append(citation(diagnoser.entries[hit.id], None))
    return out
