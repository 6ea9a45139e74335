"""The diagnosis pipeline: normalise, extract signals, rules first, semantic second, fuse, abstain."""

from __future__ import annotations

import copy
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass

from kb import calibration as calibration_model
from kb import provenance as _provenance
from kb import scoring as S
from kb.corpus import Corpus
from kb.didyoumean import key_suggestions
from kb.distill import distill, is_question
from kb.entry import Entry
from kb.fixvalues import render_fix, render_overrides
from kb.inputs import Input, decode
from kb.loglines import Line, split_lines
from kb.result import (
    ConditionResult,
    EnvSetting,
    Evidence,
    KnownBug,
    Match,
    RenderedOverride,
    Result,
    SignalsSummary,
    SimilarIssue,
)
from kb.retriever import IssueSearcher, Retriever
from kb.rules import RuleEngine, check_condition
from kb.scoring import MATCH_THRESHOLD, POSSIBLE_THRESHOLD, RULES_DECISIVE
from kb.signals import MetricPoint, Signals, extract_signals
from kb.versions import VersionError, in_range, parse_version


@dataclass
class Candidate:
    entry: Entry
    rule: float = 0.0
    semantic: float = 0.0
    lexical: float = 0.0
    evidence: list[Evidence] | None = None
    question: bool = False


def _semantic_confidence(sim: float) -> float:
    if sim <= S.SEMANTIC_FLOOR:
        return 0.0
    return min(1.0, (sim - S.SEMANTIC_FLOOR) / (S.SEMANTIC_FULL - S.SEMANTIC_FLOOR))


class Diagnoser:
    """Holds the corpus, the compiled rules, and (lazily) the retriever."""

    def __init__(
        self,
        corpus: Corpus,
        retriever_factory: Callable[[], Retriever] | None = None,
        issues_factory: Callable[[], IssueSearcher | None] | None = None,
    ) -> None:
        self.corpus = corpus
        self.entries = corpus.by_id()
        self.rules = RuleEngine(corpus.entries)
        self._retriever_factory = retriever_factory
        self._retriever: Retriever | None = None
        # A server warms the model in a thread while its first request may ask for it: load it once.
        self._retriever_lock = threading.Lock()
        self.issues_factory = issues_factory
        self._issues: IssueSearcher | None = None
        self._issues_loaded = False
        self.kb_version = corpus.fingerprint
        #: Fitted confidence (kb/data/calibration.json, applied by :meth:`calibrate`); None keeps the hand-set
        #: fusion and its thresholds.
        self.calibration = calibration_model.load()

    def without_retriever(self) -> Diagnoser:
        """The same corpus and compiled rules with no semantic layer: never loads the model."""
        clone = copy.copy(self)
        clone._retriever_factory = None
        clone._retriever = None
        clone._retriever_lock = threading.Lock()
        return clone

    @property
    def retriever(self) -> Retriever | None:
        if self._retriever is None and self._retriever_factory is not None:
            with self._retriever_lock:
                if self._retriever is None:
                    self._retriever = self._retriever_factory()
        return self._retriever

    @property
    def semantic_ready(self) -> bool:
        """Whether the retriever is loaded (reading this never loads it)."""
        return self._retriever is not None

    @property
    def issue_archive(self) -> IssueSearcher | None:
        """The imported issue archive (``verl-doctor issues import``), loaded on first use; None without one."""
        if not self._issues_loaded and self.issues_factory is not None:
            self._issues = self.issues_factory()
            self._issues_loaded = True
        return self._issues

    def diagnose_input(self, given: Input | str, top: int = 5, name: str = "input") -> Result:
        """What every surface does with what a user gave: ``given`` already read (``kb.inputs.read_input``)
        or text to decode (``kb.inputs.decode``: raises ``InputError`` for empty or binary input, named
        ``name``), diagnosed, with the input's own notes (a huge input cut, bytes replaced) first."""
        if isinstance(given, str):
            given = decode(given.encode("utf-8", "replace"), name)
        result = self.diagnose(given.text, top=top)
        result.notes = given.notes + result.notes
        return result

    def diagnose(self, text: str, top: int = 5, semantic: bool = True, facts: Signals | None = None) -> Result:
        """``facts``: what is known about the run beyond ``text`` (a scan's job-wide versions, GPUs,
        platform, environment and overrides); the text's own signals win where both have a value."""
        lines = split_lines(text)
        signals = extract_signals(lines)
        if facts is not None:
            merge_facts(signals, facts)
        hits = self.rules.evaluate(lines, signals)
        cands: dict[str, Candidate] = {
            eid: Candidate(self.entries[eid], rule=h.score, evidence=list(h.evidence)) for eid, h in hits.items()
        }
        best_rule = max((c.rule for c in cands.values()), default=0.0)
        notes: list[str] = []
        # A question in words and a log behave differently (a calibration may map each on its own).
        question = is_question(lines, signals)
        for c in cands.values():
            c.question = question
        if semantic and best_rule < RULES_DECISIVE and self._retriever_factory is not None:
            query = distill(lines, signals)
            retriever = self.retriever
            if retriever is not None:
                for eid, score, kind in retriever.search(query, k=8):
                    if eid not in self.entries:
                        continue
                    c = cands.setdefault(eid, Candidate(self.entries[eid], evidence=[]))
                    c.question = question
                    if kind == "semantic":
                        c.semantic = max(c.semantic, score)
                    else:
                        c.lexical = max(c.lexical, score)
        elif best_rule >= RULES_DECISIVE:
            notes.append("decided by rules; semantic search not needed")

        version = self.version_for(signals)
        # The fix is rendered for the matches shown only (below): for the dozen candidates a question
        # brings it was a fifth of a warm query, and nothing that ranks or filters them reads it.
        matches = [self.build_match(c, signals, lines, version, render=False) for c in cands.values()]
        provenance = _provenance.assess(lines, signals)
        held = _provenance.apply(matches, provenance, self.entries, MATCH_THRESHOLD)
        # The fit saw only candidates the hand-set fusion keeps, so that floor stays; the fitted one is on top.
        matches = [m for m in matches if m.features["heuristic"] >= POSSIBLE_THRESHOLD]
        matches = self.calibrate(matches, held)[:top]
        for m in matches:
            m.overrides, m.alternatives = render_fix(self.entries[m.id], version, signals.overrides)
        abstained = not any(m.verdict == "match" for m in matches)
        if (held_back := _provenance.note(provenance, matches, self.entries)) is not None:
            notes.append(held_back)
        if abstained and not matches:
            notes.append("no known problem fits this input well enough")
        similar: list[SimilarIssue] = []
        archive = self.issue_archive
        if archive is not None:
            # Beside the entries, never instead of them; semantic only when the model is loaded anyway.
            similar = archive.similar(distill(lines, signals), k=3, semantic=semantic and self._retriever is not None)
            if similar and abstained:
                notes.append("no entry is confident; similar past issues are listed")
        return Result(
            kb_version=self.kb_version,
            abstained=abstained,
            verl_version_used=version,
            signals=_summary(signals),
            matches=matches,
            notes=notes,
            similar_issues=similar,
            did_you_mean=key_suggestions(signals, lines, version),
            provenance=provenance,
        )

    def diagnose_metrics(self, signals: Signals, series: dict[str, list[MetricPoint]]) -> list[Match]:
        """The corpus's metric signatures over a run's metric ``series`` (a scan's job), scored as
        :meth:`diagnose` scores any rule hit: conditions checked against ``signals`` (the job's facts),
        overrides rendered for its verl version, below ``POSSIBLE_THRESHOLD`` dropped, best first. Only
        hits with metric evidence count (the text's own signals are the log scan's)."""
        if not series:
            return []
        sig = signals.model_copy(update={"metrics": series})
        hits = self.rules.evaluate([], sig)
        version = self.version_for(sig)
        matches = []
        for entry_id, hit in hits.items():
            evidence = [ev for ev in hit.evidence if ev.kind == "metric"]
            if not evidence:
                continue
            match = self.build_match(
                Candidate(self.entries[entry_id], rule=hit.score, evidence=evidence), sig, [], version
            )
            if match.confidence >= POSSIBLE_THRESHOLD:
                matches.append(match)
        return self.calibrate(matches, set())

    def calibrate(self, matches: list[Match], held: set[str]) -> list[Match]:
        """Best first in the fused order, each fused confidence (after provenance) replaced by the fitted
        probability, verdicts from the fit's thresholds, candidates below its `possible` floor dropped.
        ``held``: the ids provenance held back, which stay near misses whatever the fit says. Without a
        calibration the fused scores stand.

        A calibration never reorders: the fused order is what the benchmark's top-1 was tuned on, and a fit
        may reorder only where it ranks better, which none did on dev. So that the list still reads best
        first, a candidate never shows more than the one above it."""
        cal = self.calibration
        ranked = sorted(matches, key=lambda m: (-m.confidence, m.id))
        kept = []
        ceiling = 1.0
        for i, m in enumerate(ranked):
            calibration_model.finish(m.features, m.confidence, m.id in held, first=i == 0)
            if cal is not None:
                m.confidence = ceiling = min(ceiling, cal.probability(m.features))
                m.verdict = "match" if cal.is_match(m.confidence) and m.id not in held else "possible"
                if m.confidence < cal.possible_threshold:
                    continue
            kept.append(m)
        return kept

    @staticmethod
    def version_for(signals: Signals) -> str | None:
        found = signals.versions.get("verl")
        if found is None:
            return None
        try:
            in_range(found, ">=0")
        except VersionError:
            return None
        return found

    def _confidence(self, c: Candidate) -> tuple[float, list[Evidence]]:
        evidence = list(c.evidence or [])
        sem = _semantic_confidence(c.semantic)
        # Lexical agreement only ever supports the semantic score; alone it is too weak to claim anything.
        cap = S.RETRIEVAL_CAP_QUESTION if c.question else S.RETRIEVAL_CAP_LOG
        retrieval = min(cap, sem * S.SEMANTIC_WEIGHT + c.lexical * S.LEXICAL_WEIGHT * (1 if sem > 0 else 0))
        if c.semantic > 0:
            evidence.append(Evidence(kind="semantic", text=f"similar to this entry (cosine {c.semantic:.2f})"))
        conf = c.rule + (1 - c.rule) * retrieval * S.RETRIEVAL_SUPPORT_SHARE if c.rule > 0 else retrieval
        return conf, evidence

    def build_match(
        self, c: Candidate, signals: Signals, lines: list[Line], version: str | None, render: bool = True
    ) -> Match:
        """The scored match of a candidate; ``render=False`` leaves its fix (overrides, alternatives) empty
        for the caller to render once it knows which matches it keeps."""
        entry = c.entry
        conf, evidence = self._confidence(c)
        conditions = [
            ConditionResult(text=cond.text, status=check_condition(cond, signals, lines))
            for cond in entry.meta.conditions
        ]
        fails = sum(1 for x in conditions if x.status == "fails")
        holds = sum(1 for x in conditions if x.status == "holds")
        conf *= S.CONDITION_FAILS_FACTOR**fails
        conf = min(S.CONDITION_CAP, conf + S.CONDITION_HOLDS_SHARE * holds * (1 - conf))
        known_bug = _known_bug(entry, version)
        if known_bug is not None and known_bug.affected is False:
            # A release with the fix: a near miss at most, unless a symptom this exact fired (a partial fix,
            # a mixed install), which keeps its confidence.
            if c.rule < S.EXACT_SYMPTOM:
                conf = min(conf * S.FIXED_RELEASE_FACTOR, S.FIXED_RELEASE_CAP)
        elif version is not None and entry_excludes(entry, version):
            conf *= S.OUTSIDE_RANGE_FACTOR
        conf = max(0.0, min(1.0, conf))
        features = calibration_model.features(
            conf,
            c.rule,
            c.semantic,
            c.lexical,
            c.question,
            fails,
            holds,
            version is not None and entry_excludes(entry, version),
            shows_verl(signals),
        )
        conf = round(conf, 3)
        overrides, alternatives = render_fix(entry, version, signals.overrides) if render else ([], [])
        match = Match(
            id=entry.id,
            title=entry.title,
            area=entry.area,
            confidence=conf,
            verdict="match" if conf >= MATCH_THRESHOLD else "possible",
            cause=entry.cause,
            conditions=conditions,
            overrides=overrides,
            alternatives=alternatives,
            env=rendered_env(entry),
            actions=list(entry.meta.fix.actions),
            evidence=evidence,
            sources=list(entry.meta.sources),
            known_bug=known_bug,
        )
        match.features = features
        return match


_VERL_KEY_ROOTS = ("actor_rollout_ref.", "critic.", "reward_model.", "algorithm.", "trainer.", "data.")


def shows_verl(signals: Signals) -> bool:
    """The input shows verl itself: a verl frame, verl's version, or verl's config keys."""
    return (
        any(f.is_verl for f in signals.frames)
        or "verl" in signals.versions
        or any(k.lstrip("+~").startswith(_VERL_KEY_ROOTS) for k in signals.overrides)
    )


def merge_facts(signals: Signals, facts: Signals) -> None:
    """Fill what ``signals`` lacks from ``facts`` (metrics and errors stay the text's own)."""
    for pkg, version in facts.versions.items():
        signals.versions.setdefault(pkg, version)
    signals.gpus = signals.gpus or list(facts.gpus)
    signals.platform = signals.platform or facts.platform
    signals.env += [name for name in facts.env if name not in signals.env]
    for key, value in facts.overrides.items():
        signals.overrides.setdefault(key, value)


def _known_bug(entry: Entry, version: str | None) -> KnownBug | None:
    fixed = entry.meta.fixed_in
    if fixed is None:
        return None
    affected = None if version is None else parse_version(version) < parse_version(fixed.verl)
    return KnownBug(fixed_in=fixed.verl, pr=fixed.pr, affected=affected)


def entry_excludes(entry: Entry, version: str) -> bool:
    """``version`` is a release outside the entry's ``verl`` range (an unparsable one excludes nothing)."""
    try:
        return not in_range(version, entry.meta.verl)
    except VersionError:
        return False


def rendered_env(entry: Entry) -> list[EnvSetting]:
    """The entry's environment variables, each as a line a shell takes."""
    return [
        EnvSetting(name=e.name, value=e.value, line=f"{e.name}={shlex.quote(e.value)}", note=e.note)
        for e in entry.meta.fix.env
    ]


def rendered_overrides(entry: Entry, version: str | None) -> list[RenderedOverride]:
    """The entry's main overrides for ``version``; for an unknown version, every range's line (computed values
    shown as the entry's examples: no job here)."""
    return render_overrides(entry.meta.fix.overrides, version)


def _summary(signals: Signals) -> SignalsSummary:
    return SignalsSummary(
        exceptions=[e.type for e in signals.exceptions][:10],
        hydra_errors=[f"{h.kind}: {h.key}" for h in signals.hydra if h.kind != "full_key"][:10],
        versions=dict(signals.versions),
        gpu=signals.gpus[0] if signals.gpus else None,
        platform=signals.platform,
        overrides=dict(list(signals.overrides.items())[:100]),
        metrics=sorted(signals.metrics)[:200],
        lines=signals.line_count,
    )
