"""``verl-doctor corpus validate``: every rule an entry must keep, with file:line for each break."""

from __future__ import annotations

import os
import shlex
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from kb.corpus import Corpus, CorpusError, EntryProblem, load_corpus
from kb.corpus_files import iter_entry_files
from kb.entry import Entry, TextCheck
from kb.keysets import KeyStatus, classify
from kb.overrides import close_keys, render_override, render_value
from kb.patterns import PatternError, PatternSet, check_linear
from kb.versions import KNOWN_RELEASES, KNOWN_SPAN, parse_version, releases_in


def _rel(entry: Entry) -> str:
    return os.path.relpath(entry.path)


def default_fixtures_dir(corpus_root: Path) -> Path:
    return corpus_root.resolve().parent / "tests" / "fixtures" / "entries"


def fixtures_to_check(corpus_root: Path, fixtures_dir: Path | None = None) -> Path | None:
    """Where the entries' fixtures are checked: ``fixtures_dir`` when given; else the checkout's
    ``tests/fixtures/entries`` beside the corpus, when there is one. None (fixtures not checked) for a
    corpus that stands alone: a copy, or the one bundled in an installed wheel."""
    if fixtures_dir is not None:
        return fixtures_dir
    found = default_fixtures_dir(corpus_root)
    return found if found.is_dir() else None


def _entry_lines(entry: Entry) -> dict[tuple[object, ...], int]:
    """1-based line of each front-matter node, keyed by its path (('fix','overrides',0,'key'), ...)."""
    text = Path(entry.path).read_text(encoding="utf-8")
    first = text.split("\n", 1)
    body = first[1] if len(first) > 1 else ""
    yaml_text = body.split("\n---", 1)[0]
    lines: dict[tuple[object, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[object, ...]) -> None:
        lines[path] = node.start_mark.line + 2
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                lines[(*path, k.value)] = k.start_mark.line + 2
                walk(v, (*path, k.value))
                lines[(*path, k.value)] = k.start_mark.line + 2
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, (*path, i))

    try:
        root = yaml.compose(yaml_text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return lines
    if root is not None:
        walk(root, ())
    return lines


def _line(lines: dict[tuple[object, ...], int], *path: object) -> int:
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path, 1)


def check_patterns(entries: list[Entry], lines_of: dict[str, dict[tuple[object, ...], int]]) -> list[EntryProblem]:
    problems: list[EntryProblem] = []
    all_patterns: list[str] = []
    owners: list[tuple[Entry, int]] = []
    conditions: list[tuple[Entry, tuple[object, ...], str]] = []
    for entry in entries:
        lines = lines_of[entry.id]
        regexes: list[tuple[tuple[object, ...], str]] = []
        for i, s in enumerate(entry.meta.symptoms):
            if s.regex:
                regexes.append((("symptoms", i, "regex"), s.regex))
            if s.message:
                regexes.append((("symptoms", i, "message"), s.message))
        for i, c in enumerate(entry.meta.conditions):
            if isinstance(c.check, TextCheck):
                regexes.append((("conditions", i, "check", "text"), c.check.text))
        for path, pattern in regexes:
            try:
                check_linear(pattern)
            except PatternError as exc:
                problems.append(EntryProblem(_rel(entry), _line(lines, *path), f"regex {pattern!r} {exc}"))
                continue
            if path[-1] == "regex":
                all_patterns.append(pattern)
                owners.append((entry, int(str(path[1]))))
            elif path[0] == "conditions":
                conditions.append((entry, path, pattern))
    # The scanner compiles every symptom regex into one Hyperscan database: prove that it can.
    for idx, message in PatternSet.hyperscan_errors(all_patterns):
        entry, sym = owners[idx]
        line = _line(lines_of[entry.id], "symptoms", sym, "regex")
        problems.append(
            EntryProblem(_rel(entry), line, f"regex {all_patterns[idx]!r} is refused by Hyperscan: {message}")
        )
    # Condition regexes obey the same rule: linear time, proved by Hyperscan where it is installed.
    for idx, message in PatternSet.hyperscan_errors([c[2] for c in conditions]):
        entry, path, pattern = conditions[idx]
        line = _line(lines_of[entry.id], *path)
        problems.append(EntryProblem(_rel(entry), line, f"regex {pattern!r} is refused by Hyperscan: {message}"))
    if not problems and all_patterns:
        try:
            PatternSet(all_patterns)
        except PatternError as exc:
            problems.append(EntryProblem(_rel(entries[0]), 1, f"the whole symptom set does not compile: {exc}"))
    return problems


def check_overrides_of(entry: Entry, lines: dict[tuple[object, ...], int]) -> list[EntryProblem]:
    problems = []
    entry_releases = set(releases_in(entry.meta.verl))
    for i, ov in enumerate(entry.meta.fix.overrides):
        covered = [r for r in releases_in(ov.verl) if r in entry_releases]
        line = _line(lines, "fix", "overrides", i, "key")
        if not covered:
            problems.append(
                EntryProblem(
                    _rel(entry),
                    line,
                    f"override {ov.key}: its range '{ov.verl}' covers no release from {KNOWN_SPAN} within the "
                    f"entry's range '{entry.meta.verl}', so it cannot be checked",
                )
            )
            continue
        bad: dict[str, list[str]] = defaultdict(list)
        for release in covered:
            info = classify(ov.key, release)
            if info.status is KeyStatus.UNKNOWN:
                bad["unknown"].append(release)
            elif info.status is KeyStatus.IGNORED:
                bad["ignored"].append(release)
        if bad["unknown"]:
            rels = bad["unknown"]
            close = close_keys(ov.key, rels[-1])
            hint = f"; closest keys in {rels[-1]}: {', '.join(close)}" if close else ""
            problems.append(
                EntryProblem(
                    _rel(entry),
                    line,
                    f"override {ov.key} is not a key verl reads in {', '.join(rels)} "
                    f"(neither in the config nor a known '+' key){hint}",
                )
            )
        if bad["ignored"]:
            info = classify(ov.key, bad["ignored"][0])
            use = f"; use {info.use_instead}" if info.use_instead else ""
            problems.append(
                EntryProblem(
                    _rel(entry),
                    line,
                    f"override {ov.key} is accepted but ignored by verl {', '.join(bad['ignored'])}{use}",
                )
            )
    return problems


def _hydra_parser() -> Any:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


def check_override_lines(entry: Entry, lines: dict[tuple[object, ...], int]) -> list[EntryProblem]:
    """Every line an entry renders, for every release it covers, must survive a POSIX shell's word
    splitting as one word, and Hydra's override grammar must read back the key, its '+', and the value."""
    from hydra.errors import HydraException

    parser = _hydra_parser()
    problems = []
    entry_releases = set(releases_in(entry.meta.verl))
    for i, ov in enumerate(entry.meta.fix.overrides):
        line_no = _line(lines, "fix", "overrides", i, "value")
        if isinstance(ov.value, str) and ov.value.strip()[:1] in ("[", "{"):
            problems.append(
                EntryProblem(
                    _rel(entry),
                    line_no,
                    f"override {ov.key}: the value {ov.value!r} is a string, which Hydra would keep as a string; "
                    "write a list as a YAML list (value: [console, wandb])",
                )
            )
            continue
        for release in (r for r in releases_in(ov.verl) if r in entry_releases):
            line = render_override(ov.key, ov.value, release)
            try:
                words = shlex.split(line)
            except ValueError as exc:
                words, why = [], str(exc)
            else:
                why = f"{len(words)} words"
            if len(words) != 1:
                message = f"{release}: `{line}` is not one shell word ({why})"
                problems.append(EntryProblem(_rel(entry), line_no, message))
                break
            try:
                parsed = parser.parse_override(words[0])
            except HydraException as exc:
                message = f"{release}: Hydra cannot parse `{line}`: {str(exc).splitlines()[0]}"
                problems.append(EntryProblem(_rel(entry), line_no, message))
                break
            prefix = classify(ov.key, release).prefix
            value = parsed.value()
            if parsed.get_key_element() != f"{prefix}{ov.key}" or render_value(value) != render_value(ov.value):
                problems.append(
                    EntryProblem(
                        _rel(entry),
                        line_no,
                        f"{release}: Hydra reads `{line}` as {parsed.get_key_element()}={value!r}, "
                        f"not {prefix}{ov.key}={ov.value!r}",
                    )
                )
                break
    return problems


def check_fixed_in(entry: Entry, lines: dict[tuple[object, ...], int]) -> list[EntryProblem]:
    """A known bug's ``verl`` range is its affected releases: some known release in it, none from the fix on."""
    fixed = entry.meta.fixed_in
    if fixed is None:
        return []
    line = _line(lines, "fixed_in", "verl")
    if fixed.verl not in KNOWN_RELEASES:
        return [
            EntryProblem(
                _rel(entry), line, f"fixed_in.verl {fixed.verl} is no known release ({', '.join(KNOWN_RELEASES)})"
            )
        ]
    affected = releases_in(entry.meta.verl)
    problems = []
    later = [r for r in affected if parse_version(r) >= parse_version(fixed.verl)]
    if later:
        problems.append(
            EntryProblem(
                _rel(entry),
                _line(lines, "verl"),
                f"the range '{entry.meta.verl}' covers {', '.join(later)}, which have the fix of {fixed.verl}: "
                f"end it with ',<{fixed.verl}'",
            )
        )
    if not affected:
        problems.append(EntryProblem(_rel(entry), _line(lines, "verl"), "the bug affects no known release"))
    if fixed.pr not in entry.meta.sources and fixed.pr.replace("verl-project", "volcengine") not in entry.meta.sources:
        problems.append(EntryProblem(_rel(entry), line, f"cite the fix {fixed.pr} in sources"))
    return problems


def check_fixtures(entry: Entry, fixtures_dir: Path) -> list[EntryProblem]:
    folder = fixtures_dir / entry.id
    shown = os.path.relpath(folder)
    if not folder.is_dir():
        return [EntryProblem(_rel(entry), 2, f"no fixtures: {shown}/ must hold positive*.log and negative*.log")]
    names = [p.name for p in folder.iterdir() if p.is_file() and p.stat().st_size > 0]
    problems = []
    if not any(n.startswith("positive") for n in names):
        problems.append(EntryProblem(_rel(entry), 2, f"no positive fixture (non-empty positive*) in {shown}/"))
    if not any(n.startswith("negative") for n in names):
        problems.append(EntryProblem(_rel(entry), 2, f"no negative fixture (non-empty negative*) in {shown}/"))
    return problems


def validate_corpus(root: Path, fixtures_dir: Path | None = None) -> tuple[Corpus | None, list[EntryProblem]]:
    """Load and check the whole corpus. Returns the corpus (None if unreadable) and all problems."""
    try:
        corpus = load_corpus(root)
    except CorpusError as exc:
        return None, [EntryProblem(str(root), 0, str(exc))]
    problems = list(corpus.problems)

    seen: dict[str, str] = {}
    for path in iter_entry_files(root):  # ids from broken entries count too: a reused id is always wrong
        entry_id = path.stem
        if entry_id in seen:
            problems.append(EntryProblem(os.path.relpath(path), 2, f"id '{entry_id}' is also used by {seen[entry_id]}"))
        else:
            seen[entry_id] = os.path.relpath(path)

    lines_of = {e.id: _entry_lines(e) for e in corpus.entries}
    problems += check_patterns(corpus.entries, lines_of)
    known_ids = set(seen)
    fixtures = fixtures_to_check(root, fixtures_dir)
    for entry in corpus.entries:
        lines = lines_of[entry.id]
        problems += check_overrides_of(entry, lines)
        problems += check_fixed_in(entry, lines)
        problems += check_override_lines(entry, lines)
        if fixtures is not None:
            problems += check_fixtures(entry, fixtures)
        for i, rel in enumerate(entry.meta.related):
            if rel not in known_ids:
                problems.append(
                    EntryProblem(_rel(entry), _line(lines, "related", i), f"related id '{rel}' is no entry")
                )
    return corpus, sorted(set(problems))
