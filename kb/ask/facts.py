"""What a conversation says about the user's set-up (verl version, platform, GPU, overrides), and whether a
turn is a follow-up that only adds facts to an earlier turn's topic."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kb.ask.models import Facts
from kb.distill import is_question
from kb.entry import Entry, OverrideCheck
from kb.loglines import Line, split_lines
from kb.signals import Signals, extract_signals
from kb.versions import VersionError, parse_version

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



def fact_signals(facts: Facts, lines: list[Line], entry: Entry | None = None) -> Signals:
    """The signals of ``lines`` with what the conversation said on top (the conversation wins)."""
    signals = extract_signals(lines)
    signals.versions.update(facts.versions)
    signals.platform = facts.platform or signals.platform
    if facts.gpu and facts.gpu not in signals.gpus:
        signals.gpus.insert(0, facts.gpu)
    signals.overrides.update(facts.overrides)
    if entry is not None:  # a short key ("rollout.n") answers a condition on the full one
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


def is_question_text(text: str) -> bool:
    """The text reads as a question in words (not a log or traceback)."""
    lines = split_lines(text)
    return is_question(lines, extract_signals(lines))
